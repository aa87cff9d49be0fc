// expect: 10:7 topic "ledger" has @partitions 8 on "reverseEntry" but 4 on "postEntry"; a topic has one partition count
export interface Entry { accountId: string; cents: number }
export interface Jobs {
  /** @topic ledger
   *  @partitionKey accountId
   *  @partitions 4 */
  postEntry: Entry;
  /** @topic ledger
   *  @partitionKey accountId
   *  @partitions 8 */
  reverseEntry: Entry;
}
