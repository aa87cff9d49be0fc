// expect: 3:7 job "processOrder" has @topic but no @partitionKey
export interface Jobs {
  /** @topic orders */
  processOrder: { customerId: number };
}
