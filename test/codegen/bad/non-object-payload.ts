// expect: 4:14 payload of "sendEmail" must be an object type
export interface Jobs {
  ok: { n: number };
  sendEmail: string;
}
