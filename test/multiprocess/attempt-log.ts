/**
 * The attempt logs the child processes write (format in
 * attempt-log-writer.mjs), and the checks every fault test runs on them
 * against the job rows ({@link checkAttemptLog}):
 * - nothing lost: every job succeeded, with an attempt whose handler ended
 *   `ok` and whose write was applied, and no attempt of it began after that one;
 * - nothing run twice: a job whose handler ended `ok` in more than one
 *   attempt is a duplicate (`figures.duplicates`), excused only when the
 *   options say why (a killed or stopped process, a killed database server);
 * - order, for partitioned jobs: in each partition no attempt of a job that
 *   wrote starts before the previous job's successful attempt ended, and no
 *   attempt at all starts before some attempt of the previous job ended ok
 *   (a partition run, P3, runs a job after the one before it ended ok, and
 *   writes both together: when its process dies first, both run again); per key (the payload's
 *   `key`), the applied successes are strictly increasing in enqueue order
 *   (and so are sequences; stored success times never go back). Applied lines
 *   are logged after the commit, by a process that may be busy, so they are
 *   compared with each other only within one process; across processes a
 *   success must be applied after the previous job's handler ended (its end
 *   line precedes its write);
 * - fencing: no two attempts of one partition overlap in time unless one of
 *   them has no applied write (its claim lost the lease, or its process died);
 * - continuations: no attempt of a continuation starts before its parent's
 *   successful attempt ended.
 * Jobs without a partition (plain jobs) get the first two checks only.
 * {@link analyseAttemptLog} returns what each check found (the soak reports
 * it); {@link checkAttemptLog} asserts that each found nothing.
 */
import { existsSync, readFileSync } from "node:fs";
import { expect } from "vitest";
import type { JobRecord } from "@later/runtime/internal";

/** Now on the attempt log's clock (ms, monotonic, the same in every process of the machine; see attempt-log-writer.mjs): for times a test compares with the log's. */
export function attemptLogNow(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** One attempt as the children logged it. */
export interface Attempt {
  jobId: string;
  /** The logged key ("-" for a job without one). */
  key: string;
  /** The logged number (NaN for a job without one). */
  n: number;
  attempt: number;
  pid: number;
  start: number;
  end: number | null;
  result: string | null;
  /** The runner's event for this claim's outcome write: only present when the write was applied. */
  applied: { stage: string; t: number } | null;
}

/**
 * Parses the children's logs; `problems` lists lines that break the protocol (a claim started again in its
 * process before its first start ended, an end or applied line without its start). One attempt number
 * may start more than once: a partition run's follower (P3) is written only with its run, so when its
 * process dies or its lease is lost before that write, it runs again under the same number; an end or
 * applied line belongs to the latest start of its job and attempt in the same process.
 */
export function readAttemptLog(logFiles: readonly string[]): { attempts: Attempt[]; problems: string[] } {
  const latest = new Map<string, Attempt>();
  const all: Attempt[] = [];
  /** The latest start of each job and attempt by log file (one per process, whose applied lines carry no pid). */
  const inFile = new Map<string, Attempt>();
  const problems: string[] = [];
  for (const file of logFiles) {
    // Every line is written with its newline in one append, so what follows the last newline is a line torn by a
    // SIGKILL (Linux stops a write to a file at a page boundary when a fatal signal is pending): dropped, as a line
    // the process never finished writing.
    const lines = existsSync(file) ? readFileSync(file, "utf8").split("\n").slice(0, -1) : [];
    for (const line of lines) {
      const f = line.split(" ");
      if (f[0] === "start") {
        const key = `${f[1]} ${f[4]} ${f[5]}`;
        const before = latest.get(key);
        if (before && before.end === null) problems.push(`claim logged twice: ${line}`);
        const attempt: Attempt = {
          jobId: f[1]!,
          key: f[2]!,
          n: Number(f[3]),
          attempt: Number(f[4]),
          pid: Number(f[5]),
          start: Number(f[6]),
          end: null,
          result: null,
          applied: null,
        };
        latest.set(key, attempt);
        all.push(attempt);
        inFile.set(`${f[1]} ${f[4]} ${file}`, attempt);
      } else if (f[0] === "end" || f[0] === "applied") {
        // An applied line has no pid: its process is the one whose log it is in, where the job's attempt started.
        const a = f[0] === "end" ? latest.get(`${f[1]} ${f[4]} ${f[5]}`) : inFile.get(`${f[1]} ${f[2]} ${file}`);
        if (!a) problems.push(`no start in the same process for: ${line}`);
        else if (f[0] === "end") [a.end, a.result] = [Number(f[6]), f[7]!];
        else if (a.applied) problems.push(`applied twice: ${line}`);
        else a.applied = { stage: f[3]!, t: Number(f[4]) };
      }
    }
  }
  return { attempts: all, problems };
}

/** One job's attempts, for failure messages: `#attempt pid start..end result applied@t`. */
export function traceAttempts(tries: readonly Attempt[]): string {
  return tries
    .map(
      (a) =>
        `#${a.attempt} pid ${a.pid} ${a.start.toFixed(3)}..${a.end?.toFixed(3) ?? "-"} ${a.result ?? "-"} ${a.applied ? `${a.applied.stage}@${a.applied.t.toFixed(3)}` : "unapplied"}`,
    )
    .join(", ");
}

export interface CheckOptions {
  /** pid → time of death of a SIGKILLed process: its attempts without an end line end there, a success it committed as it died has no applied line, and a job it ran may run again. */
  killed?: ReadonlyMap<number, number>;
  /** Attempts whose applied line may have been logged late (the process was stopped between the write and the log line): not used for timing. */
  lateApplied?: (a: Attempt) => boolean;
  /**
   * Attempts that a fault the test caused may have cut off between their
   * handler and their outcome write (a database server killed while the write
   * was on its way, which may have committed without its reply arriving; a
   * process stopped past its lease): a stored success without an applied
   * line is accepted, and a later run of the same job is an excused duplicate.
   */
  faulted?: (a: Attempt) => boolean;
}

/** A job whose handler ended `ok` in more than one attempt. */
export interface Duplicate {
  jobId: string;
  /** The attempts that ended ok, as {@link traceAttempts} prints them. */
  trace: string;
  /** True when the options excuse it (the first ok attempt's process was killed, or the attempt was `faulted`). */
  excused: boolean;
  /** The first attempt that ended ok: the one an excuse has to explain. */
  first: Attempt;
}

/** What the checks of the module doc found: each list empty on a good run. */
export interface AttemptLogFindings {
  /** Lines that break the log protocol. */
  problems: string[];
  /** Jobs not stored as succeeded exactly once by an attempt that ran ok, or run again after that. */
  lost: string[];
  /** Partition and key order violations. */
  outOfOrder: string[];
  /** Continuation attempts that started before their parent's successful attempt ended. */
  earlyContinuations: string[];
  /** Overlapping attempts of one partition that both had writes applied (unfenced). */
  overlaps: string[];
  figures: AttemptLogFigures;
}

/** The figures of a run. */
export interface AttemptLogFigures {
  jobs: number;
  attempts: number;
  /** Attempts whose requeue (a failure to be retried) was applied. */
  retries: number;
  /** Attempts that wrote nothing (lost their lease, or their process died). */
  unapplied: number;
  /** Attempts that followed an attempt of another process that wrote nothing. */
  takeovers: number;
  /** Overlapping attempt pairs in a partition, fenced or not. */
  overlaps: number;
  /** Key-order pairs not compared by applied times (a success without an applied line, or one logged late). */
  skippedPairs: number;
  appliedLogInversions: number;
  perProcess: Record<number, number>;
  duplicates: Duplicate[];
}

/** The checks of the module doc (as `expect` assertions); returns the figures of the run. */
export function checkAttemptLog(records: readonly JobRecord[], logFiles: readonly string[], options: CheckOptions = {}): AttemptLogFigures {
  const found = analyseAttemptLog(records, logFiles, options);
  expect(found.problems, "log protocol").toEqual([]);
  expect(found.lost, "every job succeeded exactly once").toEqual([]);
  expect(found.outOfOrder, "partition and key order").toEqual([]);
  expect(found.earlyContinuations, "continuations after their parent").toEqual([]);
  expect(found.overlaps, "overlapping attempts that both had writes applied").toEqual([]);
  return found.figures;
}

/** Runs the checks of the module doc; returns what each found, and the figures. */
export function analyseAttemptLog(records: readonly JobRecord[], logFiles: readonly string[], options: CheckOptions = {}): AttemptLogFindings {
  const { attempts, problems } = readAttemptLog(logFiles);
  const byJob = new Map<string, Attempt[]>();
  for (const a of attempts) byJob.set(a.jobId, [...(byJob.get(a.jobId) ?? []), a]);
  for (const list of byJob.values()) list.sort((x, y) => x.attempt - y.attempt || x.start - y.start);
  const won = new Map<string, Attempt>();
  const excusedUnapplied = (a: Attempt) => a.applied === null && (options.killed?.has(a.pid) === true || options.faulted?.(a) === true);

  const lost: string[] = [];
  const duplicates: Duplicate[] = [];
  for (const r of records) {
    const tries = byJob.get(r.id) ?? [];
    // The stored attempt's run whose success was applied (a number may have run more than once, see readAttemptLog), else its last.
    const same = tries.filter((a) => a.attempt === r.attempt);
    const w = same.find((a) => a.applied?.stage === "success") ?? same.at(-1);
    if (r.stage !== "success") lost.push(`${r.id} is ${r.stage}`);
    else if (w?.result !== "ok") lost.push(`${r.id}: stored success of attempt ${r.attempt}, whose handler did not end ok (${w?.result ?? "never started"})`);
    else if (w.applied?.stage !== "success" && !excusedUnapplied(w)) lost.push(`${r.id}: attempt ${r.attempt} succeeded without an applied success`);
    else won.set(r.id, w);
    const story = `stored ${r.stage} #${r.attempt}, stages ${r.stages.map((x) => `${x.stage}@${x.at}`).join(" ")}; attempts ${traceAttempts(tries)}`;
    if (r.stages.filter((x) => x.stage === "success").length !== 1) lost.push(`${r.id}: stored success more than once: ${story}`);
    if (tries.length > 0 && tries[tries.length - 1]!.attempt !== r.attempt)
      lost.push(`${r.id}: attempt ${tries[tries.length - 1]!.attempt} started after the successful attempt ${r.attempt}: ${story}`);
    for (const a of tries) {
      if (a === w || a.applied === null || (a.applied.stage === "requeued" && a.result === "fail")) continue;
      lost.push(
        a.applied.stage === "success"
          ? `${r.id}: ran again after attempt ${a.attempt}'s success was applied: ${story}`
          : `${r.id}: attempt ${a.attempt} ended ${a.result} but applied ${a.applied.stage}: ${story}`,
      );
    }
    const ok = tries.filter((a) => a.result === "ok");
    if (ok.length > 1) {
      const first = ok[0]!;
      const excused = options.killed?.has(first.pid) === true || options.faulted?.(first) === true;
      duplicates.push({ jobId: r.id, trace: traceAttempts(ok), excused, first });
    }
  }

  const outOfOrder: string[] = [];
  let skippedPairs = 0;
  /** Pairs of one key whose applied lines, from two processes, are logged in the reverse order of their commits. */
  let appliedLogInversions = 0;
  const keyed = new Map<string, JobRecord[]>();
  const partitioned = new Map<string, JobRecord[]>();
  for (const r of records) {
    if (r.partition === null) continue;
    const { key } = JSON.parse(r.payload) as { key?: string };
    if (key !== undefined) keyed.set(key, [...(keyed.get(key) ?? []), r]);
    const where = `${r.topic}/${r.partition}`;
    partitioned.set(where, [...(partitioned.get(where) ?? []), r]);
  }
  const successAt = (r: JobRecord) => r.stages.filter((s) => s.stage === "success").at(-1)!.at;
  for (const [key, list] of keyed) {
    list.sort((x, y) => (JSON.parse(x.payload) as { n: number }).n - (JSON.parse(y.payload) as { n: number }).n);
    for (let i = 1; i < list.length; i++) {
      const [p, c] = [list[i - 1]!, list[i]!];
      const [wp, wc] = [won.get(p.id), won.get(c.id)];
      if (!wp || !wc) continue; // lost: reported above
      if (!(c.seq! > p.seq!)) outOfOrder.push(`${key}: n=${wc.n} has seq ${c.seq}, not after ${p.seq}`);
      if (successAt(c) < successAt(p)) outOfOrder.push(`${key}: n=${wc.n} stored success at ${successAt(c)}, before n=${wp.n} at ${successAt(p)}`);
      if (!wp.applied || !wc.applied || options.lateApplied?.(wp) || options.lateApplied?.(wc)) skippedPairs++;
      else {
        // An applied line is logged after its commit, by a process that may be busy: only within one
        // process do two applied lines keep the order of their commits. Across processes the earlier
        // job's commit is bounded from below by its handler's end line, logged before the write.
        const prevDone = wp.pid === wc.pid ? wp.applied.t : wp.end!;
        if (wp.pid !== wc.pid && !(wc.applied.t > wp.applied.t)) appliedLogInversions++;
        if (!(wc.applied.t > prevDone))
          outOfOrder.push(
            `${key}: n=${wc.n} (${c.id}, pid ${wc.pid}) applied success at ${wc.applied.t}, not after n=${wp.n} (${p.id}, pid ${wp.pid}) ${wp.pid === wc.pid ? "applied" : "ended"} at ${prevDone}`,
          );
      }
    }
  }
  const endOf = (a: Attempt) => a.end ?? options.killed?.get(a.pid) ?? Infinity;
  const writes = (a: Attempt) => a.applied !== null || won.get(a.jobId) === a;
  const overlaps: string[] = [];
  let overlapCount = 0;
  for (const [partition, list] of partitioned) {
    list.sort((x, y) => x.seq! - y.seq!);
    for (let i = 1; i < list.length; i++) {
      const prevEnd = won.get(list[i - 1]!.id)?.end;
      if (prevEnd === undefined || prevEnd === null) continue; // lost: reported above
      const firstOk = Math.min(...(byJob.get(list[i - 1]!.id) ?? []).flatMap((p) => (p.result === "ok" && p.end !== null ? [p.end] : [])));
      for (const a of byJob.get(list[i]!.id) ?? []) {
        if (writes(a) ? a.start <= prevEnd : a.start <= firstOk)
          outOfOrder.push(
            `partition ${partition}: ${a.jobId} attempt ${a.attempt} started at ${a.start}, before ${list[i - 1]!.id} (the previous seq) ended ${writes(a) ? `its successful attempt at ${prevEnd}` : `any attempt ok (first at ${firstOk})`}`,
          );
      }
    }
    const runs = list.flatMap((r) => byJob.get(r.id) ?? []).sort((x, y) => x.start - y.start);
    for (let i = 0; i < runs.length; i++) {
      for (let j = i + 1; j < runs.length && runs[j]!.start < endOf(runs[i]!); j++) {
        overlapCount++;
        const [a, b] = [runs[i]!, runs[j]!];
        if (writes(a) && writes(b)) {
          overlaps.push(
            `partition ${partition}: ${a.jobId}#${a.attempt} (pid ${a.pid}, ${a.start}..${a.end}, applied ${a.applied?.stage}) and ${b.jobId}#${b.attempt} (pid ${b.pid}, ${b.start}..${b.end}, applied ${b.applied?.stage})`,
          );
        }
      }
    }
  }
  // A continuation is released by its parent's success, written after the parent's handler ended.
  const earlyContinuations: string[] = [];
  for (const r of records) {
    const parentEnd = r.parentId === null ? undefined : won.get(r.parentId)?.end;
    if (parentEnd === undefined || parentEnd === null) continue; // no parent, or a lost one: reported above
    for (const a of byJob.get(r.id) ?? [])
      if (a.start <= parentEnd)
        earlyContinuations.push(`${r.id} attempt ${a.attempt} started at ${a.start}, before its parent ${r.parentId} ended ok at ${parentEnd}`);
  }

  const takeovers = attempts.filter((a) => {
    const prev = byJob.get(a.jobId)!.find((x) => x.attempt === a.attempt - 1);
    return prev !== undefined && prev.pid !== a.pid && !writes(prev);
  }).length;
  const perProcess: Record<number, number> = {};
  for (const a of attempts) perProcess[a.pid] = (perProcess[a.pid] ?? 0) + 1;
  return {
    problems,
    lost,
    outOfOrder,
    earlyContinuations,
    overlaps,
    figures: {
      jobs: records.length,
      attempts: attempts.length,
      retries: attempts.filter((a) => a.applied?.stage === "requeued").length,
      unapplied: attempts.filter((a) => !writes(a)).length,
      takeovers,
      overlaps: overlapCount,
      skippedPairs,
      appliedLogInversions,
      perProcess,
      duplicates,
    },
  };
}
