// The schema of DESIGN.md §2, with a Date field and a topic job.
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
