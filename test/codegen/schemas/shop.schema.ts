// The shop schema: the README's jobs (sendEmail, createAccount) and a topic job (processOrder), with a Date field.
export interface SendEmail {
  address: string;
  body: string;
}

export interface CreateAccount {
  id: string;
  createdAt: Date;
}

export interface ProcessOrder {
  customerId: number;
  description: string;
}

export interface Jobs {
  sendEmail: SendEmail;
  createAccount: CreateAccount;
  /** @topic orders
   *  @partitionKey customerId */
  processOrder: ProcessOrder;
}
