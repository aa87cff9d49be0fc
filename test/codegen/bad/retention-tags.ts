// expect: 5:7 @retainSuccess of "ping" must be an integer of ms from 0 to 3153600000000, got "-1"
// expect: 7:7 job "ping" has more than one @retainFailed
// expect: 8:7 @retainCancelled of "ping" must be an integer of ms from 0 to 3153600000000, got "1.5"
export interface Jobs {
  /** @retainSuccess -1
   *  @retainFailed 1000
   *  @retainFailed 2000
   *  @retainCancelled 1.5 */
  ping: { to: string };
}
