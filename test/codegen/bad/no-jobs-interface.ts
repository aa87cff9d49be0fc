// expect: 1:1 no `export interface Jobs
export interface SendEmail { address: string }
export interface Work { sendEmail: SendEmail }
