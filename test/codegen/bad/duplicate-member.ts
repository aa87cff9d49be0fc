// expect: 5:3 Duplicate identifier 'sendEmail'
// expect: 6:3 Duplicate identifier 'sendEmail'
export interface SendEmail { address: string }
export interface Jobs {
  sendEmail: SendEmail;
  sendEmail: SendEmail;
}
