import type { JobRecord } from "@later/runtime/internal";
import { formatDuration, formatTime } from "./format-time.js";

/**
 * The `later jobs show` text: every field of the job, one `label  value`
 * line each (a partitioned job's topic, partition and sequence included,
 * its priority, unique key and group),
 * then the last error, the progress and the result (X6, cut at
 * {@link RESULT_SHOWN_CHARS} characters) and the metadata the enqueue
 * middleware stored (X10, e.g. tracing's `traceparent`) when there are, the payload (pretty JSON) and the stage history,
 * each change with its time (UTC, to the ms) and the time since the one
 * before. The error of a job that succeeded on a retry is labelled
 * `earlier error (attempt N, before the job succeeded)`: it is kept, and
 * is not why the job is where it is.
 *
 * ```text
 * id           01jh2k3m4n5p6q7r8s9t0v1w2x
 * type         sendEmail
 * stage        failed
 * ...
 * stage history
 *   2025-01-02T03:04:05.100Z  enqueued
 *   2025-01-02T03:04:05.112Z  running   +12ms
 *   2025-01-02T03:04:06.120Z  failed    +1.0s  (permanent: PermanentJobError)
 * ```
 *
 * A change with a note (docs/semantics.md J1) ends with it in parentheses,
 * worded by {@link stageNoteText}.
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
    ["topic", job.topic ?? "- (not partitioned)"],
    ["partition", job.partition === null ? "-" : String(job.partition)],
    ["sequence", job.seq === null ? "-" : String(job.seq)],
    ["priority", String(job.priority)],
    ["unique key", job.uniqueKey === null ? "-" : `${job.uniqueKey}${job.uniqueSlot === null ? " (released)" : ` (holds ${job.uniqueSlot})`}`],
    ["group", job.group ?? "-"],
    ["lease", lease],
    ["created", formatTime(job.createdAt)],
    ["updated", formatTime(job.updatedAt)],
    ["expires", job.expiresAt === null ? "- (not terminal yet)" : formatTime(job.expiresAt)],
  ];
  const width = Math.max(...fields.map(([label]) => label.length), "earlier error".length) + 2;
  const lines = fields.map(([label, value]) => `${label.padEnd(width)}${value}`);
  if (job.stage === "success" && job.lastError !== null) {
    // The error is kept when a retry succeeds: shown as "last error" it reads as if the job had failed.
    const attempt = failedAttempt(job);
    const when = attempt === null ? "before the job succeeded" : `attempt ${attempt}, before the job succeeded`;
    lines.push(...block("earlier error", `(${when}) ${job.lastError}`, width));
  } else {
    lines.push(...block("last error", job.lastError ?? "-", width));
  }
  if (job.progress !== null) lines.push(...block("progress", prettyPayload(job.progress), width));
  if (job.result !== null) lines.push(...block("result", truncated(prettyPayload(job.result), job.result), width));
  if (job.meta !== null) lines.push(...block("meta", prettyPayload(job.meta), width));
  lines.push(...block("payload", prettyPayload(job.payload), width));
  lines.push("stage history");
  const stageWidth = Math.max(...job.stages.map((s) => s.stage.length));
  job.stages.forEach((change, i) => {
    const previous = job.stages[i - 1];
    const since = previous === undefined ? "" : `  ${formatDuration(change.at - previous.at)}`;
    const note = change.note === undefined ? "" : `  (${stageNoteText(change.note)})`;
    lines.push(`  ${new Date(change.at).toISOString()}  ${change.stage.padEnd(stageWidth)}${since}${note}`.trimEnd());
  });
  return lines;
}

/**
 * A stage history note in words: `shutdown` (a put-back at the shutdown
 * deadline, docs/semantics.md J9) and `permanent` (a `PermanentJobError`,
 * docs/semantics.md J3); a note this version does not know, as stored.
 */
export function stageNoteText(note: string): string {
  if (note === "shutdown") return "put back at shutdown";
  if (note === "permanent") return "permanent: PermanentJobError";
  return note;
}

/**
 * The attempt the kept error came from: the number of runs up to the last
 * retry (`requeued`) in the stage history, or null when the history has no
 * retry (the error came some other way).
 */
function failedAttempt(job: JobRecord): number | null {
  let runs = 0;
  let attempt: number | null = null;
  for (const change of job.stages) {
    if (change.stage === "running") runs++;
    else if (change.stage === "requeued" && runs > 0) attempt = runs;
  }
  return attempt;
}

/** A labelled value over several lines: the first beside the label, the rest indented under it. */
function block(label: string, text: string, width: number): string[] {
  const [first = "", ...rest] = text.split(/\r?\n/);
  return [`${label.padEnd(width)}${first}`.trimEnd(), ...rest.map((line) => `${" ".repeat(width)}${line}`.trimEnd())];
}

/** The most characters of a result `later jobs show` prints: a result may take 64 KiB (X6); `--json` has it whole. */
export const RESULT_SHOWN_CHARS = 2_000;

/** `text` cut at {@link RESULT_SHOWN_CHARS}, saying how large the stored JSON is. */
function truncated(text: string, stored: string): string {
  if (text.length <= RESULT_SHOWN_CHARS) return text;
  return `${text.slice(0, RESULT_SHOWN_CHARS)}\n… (truncated: ${Buffer.byteLength(stored, "utf8")} bytes of JSON; --json prints it all)`;
}

function prettyPayload(payload: string): string {
  try {
    return JSON.stringify(JSON.parse(payload), null, 2);
  } catch {
    return `${payload}  (not valid JSON)`;
  }
}
