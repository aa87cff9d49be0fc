// expect: 3:18 type C is imported by the generated module, where C is the type parameter of the generated builder
export interface App { name: string }
export interface C { address: string }
export interface Jobs {
  sendEmail: C;
}
