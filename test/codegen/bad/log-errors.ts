// expect: 14:3 field onDone of "orderEvents" is a function
// expect: 20:3 log "orderEvents" needs `@partitions N` in its doc comment
// expect: 21:7 log "audit" has @topic; a log's topic name is its member name
// expect: 23:7 @partitionKey "actor" is not a field of the payload of "audit" (its fields: who)
// expect: 26:3 log "close" gives the handle logs.close, which openLogs() keeps for itself
// expect: 28:3 log "then" gives the handle logs.then, which openLogs() keeps for itself
// expect: 30:7 log "twice" has more than one @partitions
// The log topics of `interface Logs` are checked as jobs are, every error in one run: a value that
// cannot round-trip through JSON, a missing @partitions, a @topic (the member name is the topic), a
// @partitionKey that is not a field, a member whose handle openLogs() keeps for itself.
export interface OrderEvent {
  customerId: string;
  at: Date;
  onDone: () => void;
}
export interface Jobs {
  sendEmail: { to: string };
}
export interface Logs {
  orderEvents: OrderEvent;
  /** @topic audit
   *  @partitions 2
   *  @partitionKey actor */
  audit: { who: string };
  /** @partitions 1 */
  close: { at: Date };
  /** @partitions 1 */
  then: { at: Date };
  /** @partitions 1
   *  @partitions 2 */
  twice: { at: Date };
}
