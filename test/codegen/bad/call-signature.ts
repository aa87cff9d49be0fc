// expect: 4:3 interface Jobs has a call or construct signature
export interface Jobs {
  sendEmail: { address: string };
  (job: string): void;
}
