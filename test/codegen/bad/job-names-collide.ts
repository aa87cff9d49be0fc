// expect: 5:3 jobs "foo" and "Foo" would both generate the handle foo; rename one of them
// expect: 7:3 jobs "send_email" and "sendEmail" would both generate the handle sendEmail; rename one of them
export interface Jobs {
  foo: { n: number };
  Foo: { n: number };
  send_email: { n: number };
  sendEmail: { n: number };
}
