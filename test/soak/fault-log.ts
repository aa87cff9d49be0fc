/**
 * The faults a soak caused, each with its time span (on the attempt log's
 * clock), and the excuses they give: which attempts a fault may have cut
 * off between their handler and their outcome write, so that their job may
 * run again (an excused duplicate) or be stored as succeeded without an
 * applied line. Every excuse is at-least-once behaviour the library documents;
 * nothing else excuses a second run.
 *
 * | kind | what the soak did | attempts it excuses |
 * | --- | --- | --- |
 * | `sigkill` | SIGKILL of a worker process | every attempt of that process |
 * | `sigstop` | SIGSTOP of a worker process past its leases, then SIGCONT | its attempts in flight (or whose write was) while it was stopped |
 * | `connection-kill` | `pg_terminate_backend` of every worker connection | attempts that ended in the 5 s before the kill, or during it |
 * | `restart-fast` | `pg_ctl restart -m fast` | as `connection-kill` |
 * | `restart-immediate` | `pg_ctl restart -m immediate` | attempts that ended in the 5 s before the restart, or during it |
 */
import { attemptLogNow, type Attempt } from "../multiprocess/attempt-log.js";

export type FaultKind = "sigkill" | "sigstop" | "connection-kill" | "restart-fast" | "restart-immediate";

export const FAULT_KINDS: readonly FaultKind[] = ["sigkill", "sigstop", "connection-kill", "restart-fast", "restart-immediate"];

/** One fault: from its start to the moment it was over (SIGKILL: the process was dead; SIGSTOP: SIGCONT was sent; a restart: the server accepted connections). */
export interface Fault {
  kind: FaultKind;
  from: number;
  to: number;
  /** The process it hit (SIGKILL, SIGSTOP). */
  pid?: number;
  /** Connections terminated (`connection-kill`). */
  connections?: number;
}

/**
 * An outcome write goes out milliseconds after its handler's end line, but a
 * loaded machine may hold it back longer (the completion batcher, a busy event
 * loop): a write may be on its way this long after its end line.
 */
const WRITE_IN_FLIGHT_MS = 5_000;

export class FaultLog {
  readonly faults: Fault[] = [];
  /** Faults tried and not made, by reason (a SIGSTOP that would have frozen a process inside a transaction). */
  readonly skipped: Record<string, number> = {};

  /** Records a fault starting now (or at `from`); set its `to` with {@link end}. */
  begin(kind: FaultKind, pid?: number, from = attemptLogNow()): Fault {
    const fault: Fault = { kind, from, to: Number.POSITIVE_INFINITY, ...(pid === undefined ? {} : { pid }) };
    this.faults.push(fault);
    return fault;
  }

  end(fault: Fault): void {
    fault.to = attemptLogNow();
  }

  skip(reason: string): void {
    this.skipped[reason] = (this.skipped[reason] ?? 0) + 1;
  }

  /** Faults made, by kind. */
  counts(): Record<FaultKind, number> {
    const counts = Object.fromEntries(FAULT_KINDS.map((k) => [k, 0])) as Record<FaultKind, number>;
    for (const f of this.faults) counts[f.kind]++;
    return counts;
  }

  /** pid → time of death of each SIGKILLed process (`CheckOptions.killed`). */
  killed(): Map<number, number> {
    return new Map(this.faults.filter((f) => f.kind === "sigkill").map((f) => [f.pid!, f.to]));
  }

  /**
   * The fault that may have cut `a` off between its handler and its outcome
   * write, or null. Why each is at-least-once behaviour, not a bug:
   * - `sigkill`: a process killed after its handler ended ok and before its
   *   write committed leaves the claim to its lease; the job runs again once
   *   the lease expired. (Killed just after the commit, the write is stored
   *   without its applied line.)
   * - `sigstop`: a process frozen past its lease looks dead to the others;
   *   they take its claims over and run them again, and its own writes, once
   *   it runs on, are fenced off (rejected). Leases are how a frozen process
   *   and a dead one look alike.
   * - `connection-kill`, `restart-fast`: both end every session with SIGTERM;
   *   a backend that takes the interrupt after its commit and before its
   *   ReadyForQuery answers the statement with a FATAL error although it
   *   committed. The worker cannot know the write went in: its retry finds
   *   the claim finished and applies nothing.
   * - `restart-immediate`: every server process quits at once (SIGQUIT),
   *   wherever it is: a commit may be durable without any reply.
   * A write can only be cut off if it was on its way when the fault struck, so
   * the database faults excuse attempts that ended at most
   * {@link WRITE_IN_FLIGHT_MS} before the fault began, and up to its end.
   */
  excuse(a: Attempt): FaultKind | null {
    for (const f of this.faults) {
      if (f.kind === "sigkill" || f.kind === "sigstop") {
        if (a.pid !== f.pid || a.start > f.to) continue;
        if (f.kind === "sigkill" || a.end === null || a.end >= f.from - WRITE_IN_FLIGHT_MS) return f.kind;
      } else if (a.end !== null && a.end >= f.from - WRITE_IN_FLIGHT_MS && a.end <= f.to) return f.kind;
    }
    return null;
  }

  /**
   * Attempts of a stopped process whose applied line may have been logged
   * late: the write committed, then the process froze before logging it
   * (`CheckOptions.lateApplied`; such lines are not used for timing).
   */
  lateApplied(a: Attempt): boolean {
    return this.faults.some((f) => f.kind === "sigstop" && a.pid === f.pid && a.start < f.to && a.applied !== null && a.applied.t >= f.from);
  }
}
