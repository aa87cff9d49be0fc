// expect: 4:7 job "postEntry" has @partitions but no @topic; add `@topic NAME`
export interface Entry { accountId: string; cents: number }
export interface Jobs {
  /** @partitions 4 */
  postEntry: Entry;
}
