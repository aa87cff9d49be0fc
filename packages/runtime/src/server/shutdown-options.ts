/** Options of {@link BackgroundJobServer.shutdown}. */
export interface ShutdownOptions {
  /** How long running handlers get to finish and commit. Default 30000. */
  deadlineMs?: number;
}
