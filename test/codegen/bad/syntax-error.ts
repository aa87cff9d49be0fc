// expect: 4:1 '}' expected
export interface Jobs {
  sendEmail: { address: string
