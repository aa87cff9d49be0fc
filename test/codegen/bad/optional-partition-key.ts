// expect: 5:7 @partitionKey "customerId" of "processOrder" must be a required string or number field, but it is number | undefined
export interface ProcessOrder { customerId?: number }
export interface Jobs {
  /** @topic orders
   *  @partitionKey customerId */
  processOrder: ProcessOrder;
}
