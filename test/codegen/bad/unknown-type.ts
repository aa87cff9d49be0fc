// expect: 3:14 Cannot find name 'SendEmail'
export interface Jobs {
  sendEmail: SendEmail;
}
