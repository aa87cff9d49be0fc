// expect: 7:3 Subsequent property declarations must have the same type
export interface SendEmail { address: string }
export interface Jobs {
  sendEmail: SendEmail;
}
export interface Jobs {
  sendEmail: { other: number };
}
