import type { JobRecord } from "@later/runtime/internal";
import { formatTable, type TableColumn } from "./format-table.js";
import { formatTime } from "./format-time.js";

const COLUMNS: readonly TableColumn<JobRecord>[] = [
  { title: "ID", value: (j) => j.id },
  { title: "TYPE", value: (j) => j.jobType },
  { title: "STAGE", value: (j) => j.stage },
  { title: "ATTEMPT", value: (j) => String(j.attempt), right: true },
  { title: "RUN AT", value: (j) => formatTime(j.runAt) },
  { title: "UPDATED", value: (j) => formatTime(j.updatedAt) },
];

/**
 * The `later jobs list` table (see {@link formatTable}): a header and one
 * line per job, in the order given. Times are UTC to the second; `ATTEMPT` counts claims
 * (0 before the first run).
 *
 * ```text
 * ID                          TYPE       STAGE    ATTEMPT  RUN AT                UPDATED
 * 01jh2k3m4n5p6q7r8s9t0v1w2x  sendEmail  success        1  2025-01-02T03:04:05Z  2025-01-02T03:04:06Z
 * ```
 */
export function formatJobTable(jobs: readonly JobRecord[]): string[] {
  return formatTable(COLUMNS, jobs);
}
