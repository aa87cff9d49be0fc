// A type the billing schema imports from another file.
export interface Money {
  currency: "EUR" | "USD";
  cents: number;
}
