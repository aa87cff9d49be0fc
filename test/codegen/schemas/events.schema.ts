// Retained-log topics declared in the schema (docs/semantics.md L7): each member of `interface Logs` is a log
// topic named as the member, with its partition count (`@partitions`, required) and, optionally,
// the value field that keys its records (`@partitionKey`). `openLogs()` registers them all.
export interface OrderEvent {
  customerId: string;
  orderId: string;
  kind: "placed" | "paid" | "shipped";
  at: Date;
  lines: { sku: string; quantity: number; promisedBy?: Date }[];
}

export interface AuditEntry {
  actor: string;
  action: string;
}

export interface Jobs {
  /** @topic orders
   *  @partitions 4
   *  @partitionKey customerId */
  ship_order: OrderEvent;
}

export interface Logs {
  /** @partitions 8
   *  @partitionKey customerId */
  orderEvents: OrderEvent;
  /** Without a key field: each append names its `{ key }` or `{ partition }`.
   *  @partitions 2 */
  "audit-trail": AuditEntry;
  /** An inline value type: the generated module names it `Logs["clicks"]`.
   *  @partitions 1 */
  clicks: { url: string; at: Date };
}
