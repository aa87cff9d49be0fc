/**
 * The soak's verdict and its summary table: {@link soakFailures} lists every
 * check that failed (empty on a good run), {@link soakSummary} prints the
 * figures of a run, one row per figure.
 *
 * A run passes when:
 * - no job is lost: every job the producer stored is in the database, and
 *   succeeded exactly once, by an attempt that ran ok (attempt-log.ts);
 * - no job ran twice unless a fault excuses it (fault-log.ts says which);
 * - no partition or key order violation, no continuation before its parent;
 * - no two attempts of one partition overlap unless one was fenced;
 * - no unhandled error: no error event without a code, none with a code the
 *   faults do not explain, no error on a worker's stderr, no worker exiting
 *   on its own, no enqueue error, a drain within its deadline and a graceful
 *   shutdown at the end.
 */
import { FAULT_KINDS, type FaultKind } from "./fault-log.js";
import type { SoakBackend, SoakResult } from "./soak-run.js";

/**
 * Error event codes the faults explain, per backend. PostgreSQL: killed
 * connections and restarts make the database unreachable for a moment; every
 * step that fails then reports `DATABASE_UNAVAILABLE` and is tried again.
 * SQLite: a killed or stopped process never leaves the file unusable (the
 * soak does not stop a process holding the write lock), so no code is.
 */
const EXPLAINED_CODES: Record<SoakBackend, readonly string[]> = {
  sqlite: [],
  postgres: ["DATABASE_UNAVAILABLE"],
};

const LABELS: Record<FaultKind, string> = {
  sigkill: "SIGKILL",
  sigstop: "SIGSTOP past the lease",
  "connection-kill": "connection kills",
  "restart-fast": "PG restart -m fast",
  "restart-immediate": "PG restart -m immediate",
};

/** Shows at most `n` items of a list, and how many more there are. */
function some(items: readonly string[], n = 5): string {
  return items.length <= n ? items.join("; ") : `${items.slice(0, n).join("; ")}; … and ${items.length - n} more`;
}

/** Duplicates split into unexcused ones and excused ones counted by the fault that excuses each. */
function duplicates(result: SoakResult): { unexcused: string[]; excused: Record<FaultKind, number> } {
  const excused = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
  const unexcused: string[] = [];
  for (const d of result.findings.figures.duplicates) {
    const kind = result.log.excuse(d.first);
    if (kind === null) unexcused.push(`${d.jobId}: ${d.trace}`);
    else excused[kind]++;
  }
  return { unexcused, excused };
}

function errorCodes(result: SoakResult): { byCode: Record<string, number>; unexplained: string[] } {
  const byCode: Record<string, number> = {};
  const unexplained: string[] = [];
  for (const e of result.errorEvents) {
    const code = e.code ?? "(no code)";
    byCode[code] = (byCode[code] ?? 0) + 1;
    if (e.code === null || !EXPLAINED_CODES[result.backend].includes(e.code)) unexplained.push(`${code} ${e.where}: ${e.error}`);
  }
  return { byCode, unexplained };
}

/** Every failed check of the run, with its first cases; empty when the run passed. */
export function soakFailures(result: SoakResult): string[] {
  const f = result.findings;
  const failures: string[] = [];
  const check = (what: string, items: readonly string[]) => {
    if (items.length > 0) failures.push(`${what} (${items.length}): ${some(items)}`);
  };
  check("attempt log protocol", f.problems);
  check("jobs stored by the producer missing from the database", result.missing);
  check("jobs in the database the producer did not store", result.extra);
  check("lost (not succeeded exactly once)", f.lost);
  check("unexcused duplicates", duplicates(result).unexcused);
  check("partition or key order violations", f.outOfOrder);
  check("continuations started before their parent ended", f.earlyContinuations);
  check("overlapping unfenced partition runs", f.overlaps);
  check("error events the faults do not explain", errorCodes(result).unexplained);
  check("errors on worker stderr", result.stderrErrors);
  check("incidents", result.incidents);
  return failures;
}

/** The summary table of a run. */
export function soakSummary(result: SoakResult): string {
  const f = result.findings;
  const fig = f.figures;
  const s = (ms: number) => `${(ms / 1_000).toFixed(1)} s`;
  const faults = result.log.counts();
  const dup = duplicates(result);
  const { byCode, unexplained } = errorCodes(result);
  const total = Object.values(result.jobs).reduce((a, b) => a + b, 0);
  const extra = result.extra.length > 0 ? ` (and ${result.extra.length} stored that the producer did not store)` : "";
  const connections = result.log.faults.reduce((n, x) => n + (x.connections ?? 0), 0);
  const list = (counts: Record<string, number>) =>
    Object.entries(counts)
      .filter(([, n]) => n > 0)
      .map(([k, n]) => `${k} ${n}`)
      .join(", ") || "none";
  const rows: [string, string | number][] = [
    ["jobs enqueued", `${total} (${list(result.jobs)}; inserts retried after DATABASE_UNAVAILABLE ${result.insertsRetried})`],
    [
      "attempts",
      `${fig.attempts} (requeued after a failure ${fig.retries}, planned failures ${result.plannedFailures}, wrote nothing ${fig.unapplied}, taken over ${fig.takeovers})`,
    ],
    ...FAULT_KINDS.map((k): [string, string | number] => [
      `fault: ${LABELS[k]}`,
      k === "connection-kill" ? `${faults[k]} (${connections} connections)` : faults[k],
    ]),
    ["faults skipped", list(result.log.skipped)],
    ["lost", `${f.lost.length + result.missing.length}${extra}`],
    ["unexcused duplicates", dup.unexcused.length],
    ["excused duplicates", `${Object.values(dup.excused).reduce((a, b) => a + b, 0)} (${list(dup.excused)})`],
    ["order violations", `${f.outOfOrder.length} (partition and key), continuations ${f.earlyContinuations.length}`],
    ["overlapping partition runs", `${fig.overlaps} (unfenced ${f.overlaps.length})`],
    ["error events by code", list(byCode)],
    ["unhandled errors", unexplained.length + result.stderrErrors.length + result.incidents.length + f.problems.length],
  ];
  const width = Math.max(...rows.map(([k]) => k.length));
  const head = `soak on ${result.backend}: seed ${result.seed}, set-up ${s(result.took.setup)}, faults ${s(result.took.faults)}, drain ${s(result.took.drain)}, total ${s(result.took.total)}`;
  return [head, ...rows.map(([k, v]) => `  ${k.padEnd(width)}  ${v}`)].join("\n");
}
