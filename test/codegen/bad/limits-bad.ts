// expect: 5:7 @concurrency of "zero" must be an integer from 1 to 2147483647, got "0"
// expect: 7:7 @rateLimit of "noWindow" must be MAX/WINDOW, MAX an integer from 1 and WINDOW such as 1s, 500ms, 1m or 1h, got "100"
// expect: 9:7 @rateLimit of "zeroWindow" must be MAX/WINDOW, MAX an integer from 1 and WINDOW such as 1s, 500ms, 1m or 1h, got "5/0s"
export interface Jobs {
  /** @concurrency 0 */
  zero: { a: string };
  /** @rateLimit 100 */
  noWindow: { a: string };
  /** @rateLimit 5/0s */
  zeroWindow: { a: string };
}
