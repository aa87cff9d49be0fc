// The testing example's jobs: a shop that creates accounts, then welcomes them.
// After changing this file, run `pnpm --filter later-example-testing gen`.

export interface CreateAccount {
  email: string;
  /** Dates come back as Dates, in handlers and in `enqueued()`. */
  signedUpAt: Date;
}

export interface SendEmail {
  to: string;
  subject: string;
}

export interface ChargeCard {
  account: string;
  cents: number;
}

export interface Jobs {
  createAccount: CreateAccount;
  sendEmail: SendEmail;
  chargeCard: ChargeCard;
}
