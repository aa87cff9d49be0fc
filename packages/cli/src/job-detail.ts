import type { JobRecord } from "@later/runtime/internal";
import { formatDuration, formatTime } from "./format-time.js";

/**
 * The `later jobs show` text: every field of the job, one `label  value`
 * line each, then the payload (pretty JSON), the last error and the stage
 * history, each change with its time (UTC, to the ms) and the time since the one before.
 *
 * ```text
 * id           01jh2k3m4n5p6q7r8s9t0v1w2x
 * type         sendEmail
 * stage        failed
 * ...
 * stage history
 *   2025-01-02T03:04:05.100Z  enqueued
 *   2025-01-02T03:04:05.112Z  running   +12ms
 *   2025-01-02T03:04:06.120Z  failed    +1.0s
 * ```
 */
export function formatJobDetail(job: JobRecord): string[] {
  const lease = job.leaseOwner === null ? "-" : `${job.leaseOwner} until ${formatTime(job.leaseExpiresAt)}`;
  const fields: [string, string][] = [
    ["id", job.id],
    ["type", job.jobType],
    ["stage", job.stage],
    ["attempt", String(job.attempt)],
    ["run at", formatTime(job.runAt)],
    ["parent", job.parentId ?? "-"],
    ["lease", lease],
    ["created", formatTime(job.createdAt)],
    ["updated", formatTime(job.updatedAt)],
    ["expires", job.expiresAt === null ? "- (not terminal yet)" : formatTime(job.expiresAt)],
  ];
  const width = Math.max(...fields.map(([label]) => label.length), "last error".length) + 2;
  const lines = fields.map(([label, value]) => `${label.padEnd(width)}${value}`);
  lines.push(...block("last error", job.lastError ?? "-", width));
  lines.push(...block("payload", prettyPayload(job.payload), width));
  lines.push("stage history");
  const stageWidth = Math.max(...job.stages.map((s) => s.stage.length));
  job.stages.forEach((change, i) => {
    const previous = job.stages[i - 1];
    const since = previous === undefined ? "" : `  ${formatDuration(change.at - previous.at)}`;
    lines.push(`  ${new Date(change.at).toISOString()}  ${change.stage.padEnd(stageWidth)}${since}`.trimEnd());
  });
  return lines;
}

/** A labelled value over several lines: the first beside the label, the rest indented under it. */
function block(label: string, text: string, width: number): string[] {
  const [first = "", ...rest] = text.split(/\r?\n/);
  return [`${label.padEnd(width)}${first}`.trimEnd(), ...rest.map((line) => `${" ".repeat(width)}${line}`.trimEnd())];
}

function prettyPayload(payload: string): string {
  try {
    return JSON.stringify(JSON.parse(payload), null, 2);
  } catch {
    return `${payload}  (not valid JSON)`;
  }
}
