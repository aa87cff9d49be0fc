// The quickstart's jobs: one member per job, its type is the payload.
// After changing this file, run `pnpm --filter later-example-quickstart gen`.

export interface SendEmail {
  address: string;
  body: string;
}

export interface ChainStep {
  step: number;
  of: number;
}

export interface ChargeCard {
  amount: number;
  /** A Date survives the round trip through the database as a Date. */
  requestedAt: Date;
}

export interface PostEntry {
  accountId: string;
  cents: number;
}

export interface Jobs {
  sendEmail: SendEmail;
  chainStep: ChainStep;
  chargeCard: ChargeCard;
  /** The entries of one account run one at a time, in enqueue order. The topic is
   *  declared here, with its partition count: every server built from the generated
   *  module registers it.
   *  @topic ledger
   *  @partitions 4
   *  @partitionKey accountId */
  postEntry: PostEntry;
}

// Optional: what a job's handler resolves to, stored with its success and returned by
// `waitFor` (jobs left out return nothing, or anything, untyped).
export interface Results {
  chainStep: { finishedStep: number };
}
