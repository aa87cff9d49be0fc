// expect: 4:3 interface Jobs has an index signature; declare each job as a named member
export interface Jobs {
  sendEmail: { address: string };
  [job: string]: { address: string };
}
