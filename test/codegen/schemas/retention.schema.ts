// Retention per job type (J11): `@retainSuccess 0` deletes a success in its own write, `@retainFailed`
// and `@retainCancelled` keep failed and cancelled jobs for their own time (ms; `_` separators allowed);
// a job without tags keeps the server's `retentionMs`.
export interface Jobs {
  /** Sent and forgotten: nobody reads a sent ping again.
   *  @retainSuccess 0
   *  @retainFailed 604_800_000 */
  ping: { to: string };
  /** @retainCancelled 60000 */
  report: { month: string };
  audit: { entry: string };
}
