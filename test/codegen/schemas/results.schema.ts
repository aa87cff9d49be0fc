// Job results (X6): `interface Results` types the handler's resolved value of the jobs it names
// (sendEmail, the topic job chargeOrder); notify has no entry, so its handler returns anything.
export interface SendEmail {
  address: string;
}

export interface ChargeOrder {
  orderId: string;
  cents: number;
}

export interface Receipt {
  chargeId: string;
  at: string;
}

export interface Jobs {
  sendEmail: SendEmail;
  /** @topic charges
   *  @partitionKey orderId */
  chargeOrder: ChargeOrder;
  notify: { text: string };
}

export interface Results {
  sendEmail: { messageId: string };
  chargeOrder: Receipt;
}
