// expect: 5:7 @partitionKey "custId" is not a field of the payload of "processOrder" (its fields: customerId, description)
export interface ProcessOrder { customerId: number; description: string }
export interface Jobs {
  /** @topic orders
   *  @partitionKey custId */
  processOrder: ProcessOrder;
}
