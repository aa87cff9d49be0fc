// Member names later-gen accepts although they look risky: names of Object.prototype members,
// `then`, reserved words, quoted identifiers. Their module must compile and run.
export interface Job {
  n: number;
}

export interface Names {
  constructor: Job;
  then: Job;
  toString: Job;
  class: Job;
  quoted: Job;
  $: { at: Date };
  /** @topic names
   *  @partitionKey key */
  hasOwnProperty: Job & { key: string };
}
