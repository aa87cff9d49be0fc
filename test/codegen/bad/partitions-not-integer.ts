// expect: 6:7 @partitions of "postEntry" must be an integer from 1 to 4096, got "2.5"
export interface Entry { accountId: string; cents: number }
export interface Jobs {
  /** @topic ledger
   *  @partitionKey accountId
   *  @partitions 2.5 */
  postEntry: Entry;
}
