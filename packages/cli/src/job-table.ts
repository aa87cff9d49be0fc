import type { JobRecord } from "@later/runtime/internal";
import { formatTime } from "./format-time.js";

interface Column {
  title: string;
  value(job: JobRecord): string;
  /** Numbers line up on the right. */
  right?: boolean;
}

const COLUMNS: readonly Column[] = [
  { title: "ID", value: (j) => j.id },
  { title: "TYPE", value: (j) => j.jobType },
  { title: "STAGE", value: (j) => j.stage },
  { title: "ATTEMPT", value: (j) => String(j.attempt), right: true },
  { title: "RUN AT", value: (j) => formatTime(j.runAt) },
  { title: "UPDATED", value: (j) => formatTime(j.updatedAt) },
];

/**
 * The `later jobs list` table: a header and one line per job, in the order
 * given, columns padded to their widest cell (two spaces between columns,
 * no trailing spaces). Times are UTC to the second; `ATTEMPT` counts claims
 * (0 before the first run).
 *
 * ```text
 * ID                          TYPE       STAGE    ATTEMPT  RUN AT                UPDATED
 * 01jh2k3m4n5p6q7r8s9t0v1w2x  sendEmail  success        1  2025-01-02T03:04:05Z  2025-01-02T03:04:06Z
 * ```
 */
export function formatJobTable(jobs: readonly JobRecord[]): string[] {
  const cells = jobs.map((job) => COLUMNS.map((c) => oneLine(c.value(job))));
  const widths = COLUMNS.map((c, i) => Math.max(c.title.length, ...cells.map((row) => row[i]!.length)));
  const line = (row: readonly string[]) =>
    row
      .map((cell, i) => (COLUMNS[i]!.right ? cell.padStart(widths[i]!) : cell.padEnd(widths[i]!)))
      .join("  ")
      .trimEnd();
  return [line(COLUMNS.map((c) => c.title)), ...cells.map(line)];
}

/** Control characters (a newline in a job type) would break the table's lines. */
function oneLine(text: string): string {
  // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what it replaces
  return text.replace(/[\u0000-\u001f\u007f]/g, " ");
}
