// expect: 8:7 @concurrency of "zero" must be an integer from 1 to 2147483647, got "0"
// expect: 10:7 @rateLimit of "noWindow" must be MAX/WINDOW, MAX an integer from 1 and WINDOW such as 1s, 500ms, 1m or 1h, got "100"
// expect: 12:7 @rateLimit of "zeroWindow" must be MAX/WINDOW, MAX an integer from 1 and WINDOW such as 1s, 500ms, 1m or 1h, got "5/0s"
// expect: 14:7 @groupConcurrency of "zeroGroups" must be an integer from 1 to 2147483647, got "0"
// expect: 16:7 @group "tenant" is not a field of the payload of "noField" (its fields: a)
// expect: 18:7 @group "n" of "numberField" must be a required string field, but it is number
export interface Jobs {
  /** @concurrency 0 */
  zero: { a: string };
  /** @rateLimit 100 */
  noWindow: { a: string };
  /** @rateLimit 5/0s */
  zeroWindow: { a: string };
  /** @groupConcurrency 0 */
  zeroGroups: { a: string };
  /** @group tenant */
  noField: { a: string };
  /** @group n */
  numberField: { n: number };
}
