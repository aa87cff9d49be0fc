// expect: 8:3 Results member "sendMail" is not a job: interface Jobs declares no "sendMail" (a Results entry types that job's handler result)
// expect: 9:3 Results member "count" must not be optional: leave the job out of Results for an untyped result
export interface Jobs {
  sendEmail: { address: string };
  count: { n: number };
}
export interface Results {
  sendMail: { messageId: string };
  count?: number;
}
