/** The maintenance part of the seam (`backend.maintenance`): turns at periodic tasks, and reclaiming disk space. */

/** The maintenance statements of one backend, scoped to its namespace. */
export interface MaintenanceStore {
  /**
   * Takes this interval's turn at a maintenance task: true for exactly one
   * caller per `intervalMs` across every process, tracked in the database so
   * it survives restarts.
   */
  claim(params: MaintenanceClaimParams): Promise<boolean>;
  /** Reclaims space freed by deleted rows (only when `capabilities.supportsVacuum`; a no-op elsewhere). */
  vacuum(): Promise<void>;
}

export interface MaintenanceClaimParams {
  task: string;
  now: number;
  intervalMs: number;
}
