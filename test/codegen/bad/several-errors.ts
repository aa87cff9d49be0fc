// expect: 12:3 field onDone of "notify" is a function
// expect: 16:7 @partitionKey "account" is not a field of the payload of "postEntry" (its fields: accountId, cents)
// expect: 17:7 @partitions of "postEntry" must be an integer from 1 to 4096, got "many"
// expect: 21:3 jobs "sendEmail" and "send_email" would both generate the handle sendEmail; rename one of them
// later-gen reports every error of the file in one run, in file order, not only the first.
export interface Entry {
  accountId: string;
  cents: number;
}
export interface Notify {
  to: string;
  onDone: () => void;
}
export interface Jobs {
  /** @topic ledger
   *  @partitionKey account
   *  @partitions many */
  postEntry: Entry;
  notify: Notify;
  sendEmail: { to: string };
  send_email: { to: string };
}
