// expect: 3:18 interface C has the name of the type parameter of the generated builder
// interface: C
export interface C {
  sendEmail: { address: string };
}
