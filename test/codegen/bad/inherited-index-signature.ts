// expect: 5:18 interface Jobs inherits an index, call or construct signature
interface AnyJob {
  [job: string]: { address: string };
}
export interface Jobs extends AnyJob {
  sendEmail: { address: string };
}
