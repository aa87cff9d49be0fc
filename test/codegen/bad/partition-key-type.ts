// expect: 5:7 @partitionKey "tags" of "processOrder" must be a required string or number field, but it is string[]
export interface ProcessOrder { tags: string[]; description: string }
export interface Jobs {
  /** @topic orders
   *  @partitionKey tags */
  processOrder: ProcessOrder;
}
