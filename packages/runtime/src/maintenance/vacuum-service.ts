import { PeriodicService, type MaintenanceHost } from "./periodic-service.js";

/** Settings of the {@link VacuumService}. */
export interface VacuumServiceConfig {
  /** How often (one server per interval). Server option `vacuumIntervalMs`; by default never (the service is not made). */
  intervalMs: number;
}

/**
 * Task `vacuum`: reclaims the space of deleted rows (`maintenance.vacuum`,
 * SQLite `VACUUM`). Made only when `vacuumIntervalMs` is set and the backend
 * has `capabilities.supportsVacuum` (PostgreSQL's autovacuum does this on
 * its own).
 *
 * Event: `{ type: "maintenance", task: "vacuum", count: 1 }` after each run.
 */
export class VacuumService extends PeriodicService {
  constructor(host: MaintenanceHost, config: VacuumServiceConfig) {
    super(host, "vacuum", config.intervalMs, true);
  }

  async runOnce(): Promise<number> {
    await this.host.backend.maintenance.vacuum();
    return 1;
  }
}
