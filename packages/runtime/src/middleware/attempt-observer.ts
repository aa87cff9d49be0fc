import type { ClaimedJob, JobOutcome } from "../backend/backend.js";
import { attemptHooks, type AttemptContext, type Hook, type LaterMiddleware } from "./later-middleware.js";

/**
 * The key of an observer entry's {@link AttemptObserver} in the attempt
 * middleware list (X10). Internal: not exported by `@later/runtime`, so
 * only the runtime builds such entries (the server's metrics).
 */
export const ATTEMPT_OBSERVER: unique symbol = Symbol("later.attemptObserver");

/**
 * What an {@link AttemptObserver} reads of one attempt (the worker's
 * `AttemptRun` is one): declared here, beside the observers, so that they
 * need nothing from the worker that runs the attempt.
 */
export interface ObservedAttempt {
  /** Clock ms when the claim was handed to the executor: the start of the attempt's time. */
  readonly handedAt: number;
  /** The claim's lease had expired when it was handed over: not run. */
  readonly skipped: boolean;
  /** The outcome to write; null when nothing may be (skipped, abandoned, timed out). Set when the attempt is over. */
  readonly result: JobOutcome | null;
  readonly claim: {
    readonly job: ClaimedJob;
    /** Non-null for a partition's head (an ordered job). */
    readonly head: object | null;
    readonly workerId: number;
    readonly timedOut: boolean;
    readonly cancelled: boolean;
    readonly abandoned: boolean;
  };
}

/**
 * An attempt middleware in its observer form: `before` when a claim is
 * handed to the executor, `after` once the attempt is over (skipped,
 * finished, timed out, cancelled or abandoned: {@link ObservedAttempt}
 * says which). Two plain calls rather than a hook around `next()`: an observer
 * never changes the attempt, so it needs no closure or promise of its own
 * per job (an empty around-hook costs some 2% of a job's processing).
 * Neither may throw.
 */
export interface AttemptObserver {
  before(run: ObservedAttempt): void;
  after(run: ObservedAttempt): void;
}

/** A {@link LaterMiddleware} entry carrying an {@link AttemptObserver} (and usually no hook). */
export interface ObserverMiddleware extends LaterMiddleware {
  readonly [ATTEMPT_OBSERVER]: AttemptObserver;
}

/** True when `m` is an entry in the observer form. */
export function isObserverMiddleware(m: LaterMiddleware): m is ObserverMiddleware {
  return ATTEMPT_OBSERVER in m;
}

/**
 * One attempt middleware list split once, at the executor's construction:
 * the `attempt` hooks in list order (composed around the handler, the first
 * outermost), and the observers in list order. Observers see every claim
 * handed over, a skipped one included, outside every hook whatever their
 * place in the list: the server puts its metrics first, as the outermost
 * entry they are.
 */
export function splitAttemptMiddleware(middleware: readonly LaterMiddleware[]): { hooks: Hook<AttemptContext, unknown>[]; observers: AttemptObserver[] } {
  const observers = middleware.flatMap((m) => (isObserverMiddleware(m) ? [m[ATTEMPT_OBSERVER]] : []));
  return { hooks: attemptHooks(middleware), observers };
}
