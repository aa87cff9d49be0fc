// expect: 3:3 job "sendEmail" must not be optional
export interface Jobs {
  sendEmail?: { address: string };
}
