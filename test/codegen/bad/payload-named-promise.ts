// expect: 2:18 type Promise is imported by the generated module, where Promise is a global type the generated module uses
export interface Promise { orderId: string }
export interface Jobs {
  keepPromise: Promise;
}
