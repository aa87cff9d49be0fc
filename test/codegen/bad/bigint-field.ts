// expect: 3:3 field amount of "pay" is a bigint
export interface Pay {
  amount: bigint;
}
export interface Jobs {
  pay: Pay;
}
