// expect: 3:7 job "processOrder" has @partitionKey but no @topic
export interface Jobs {
  /** @partitionKey customerId */
  processOrder: { customerId: number };
}
