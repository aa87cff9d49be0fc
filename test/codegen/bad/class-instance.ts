// expect: 5:3 field owner of "audit" is an instance of class User
export class User { constructor(readonly name: string) {} }
export interface Audit {
  action: string;
  owner: User;
}
export interface Jobs {
  audit: Audit;
}
