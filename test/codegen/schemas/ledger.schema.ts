// Topics declared once, in the schema: `@partitions` registers the topic on every server and
// publisher built from the generated module. Member names in any spelling give camelCase handles
// and methods (`post_entry` → `jobs.postEntry`, `withPostEntryHandler`); the stored job type stays
// the member name as written.
export interface Entry {
  accountId: string;
  cents: number;
  memo: string;
}

export interface Statement {
  accountId: string;
  month: string;
}

export interface Jobs {
  /** @topic ledger
   *  @partitions 4
   *  @partitionKey accountId */
  post_entry: Entry;
  /** On the same topic: its partition count comes from `post_entry`.
   *  @topic ledger
   *  @partitionKey accountId */
  "reverse-entry": Entry;
  send_statement: Statement;
}
