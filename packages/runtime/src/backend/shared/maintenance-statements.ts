/** The maintenance statement that means the same on both dialects, written once (see `shared-statement.ts`). */
import type { MaintenanceClaimParams } from "../backend.js";
import { SharedStatement } from "./shared-statement.js";

/**
 * One upsert: inserts the task's row, or moves its time only when the last
 * run is at least `intervalMs` old. A row comes back only when this caller
 * took the turn (an upsert whose `WHERE` fails returns none), on both
 * dialects, so the result is read the same way.
 */
export const MAINTENANCE_CLAIM = new SharedStatement<
  MaintenanceClaimParams & { namespace: string },
  boolean,
  { namespace: string; task: string; now: number; before: number }
>({
  values: (p) => ({ namespace: p.namespace, task: p.task, now: p.now, before: p.now - p.intervalMs }),
  build: (db, $) =>
    db
      .insertInto("later_maintenance")
      .values({ namespace: $("namespace"), task: $("task"), last_run_at: $("now") })
      .onConflict((oc) =>
        oc
          .columns(["namespace", "task"])
          .doUpdateSet({ last_run_at: (eb) => eb.ref("excluded.last_run_at") })
          .where("later_maintenance.last_run_at", "<=", $("before")),
      )
      .returning("task"),
  read: (rows) => rows.length > 0,
});
