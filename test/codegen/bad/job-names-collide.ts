// expect: 4:3 jobs "foo" and "Foo" would both generate the method withFooHandler; rename one of them
export interface Jobs {
  foo: { n: number };
  Foo: { n: number };
}
