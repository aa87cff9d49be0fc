// Limits (X9): `@concurrency N` and `@rateLimit MAX/WINDOW` on a job member become the type's limits
// in the generated catalog; a handler's own options win over them.
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
}
