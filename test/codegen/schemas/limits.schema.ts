// Limits (X9): `@concurrency N`, `@rateLimit MAX/WINDOW` and `@groupConcurrency N` on a job member become
// the type's limits in the generated catalog; a handler's own options win over them. `@group FIELD` names
// the payload field whose value is a job's group when its enqueue gives none.
export interface Jobs {
  /** At most five imports at once across every server.
   *  @concurrency 5 */
  importFeed: { url: string };
  /** @rateLimit 100/1s */
  callPartner: { partnerId: string };
  /** @concurrency 2
   *  @rateLimit 10/500ms */
  chargeCard: { cents: number };
  plain: { text: string };
  /** At most two reports at once per tenant.
   *  @group tenantId
   *  @groupConcurrency 2 */
  tenantReport: { tenantId: string; month: string };
}
