// expect: 3:3 job name "send-email" must be an identifier
export interface Jobs {
  "send-email": { address: string };
}
