// Interface `Billing` (not `Jobs`): generated names start with it. Inline and imported payload types.
import type { Money } from "./money.js";

export type InvoiceId = string & { readonly __brand: "InvoiceId" };

export interface Invoice {
  id: InvoiceId;
  total: Money;
  lines: { sku: string; quantity: number; price: Money }[];
  status: "draft" | "sent" | "paid";
}

export interface Billing {
  sendInvoice: Invoice;
  /** Inline payload: written as Billing["refund"] in the generated module. */
  refund: { invoiceId: InvoiceId; amount: Money; reason?: string };
  /** @topic ledger
   *  @partitionKey account */
  postEntry: { account: string; amount: Money };
}
