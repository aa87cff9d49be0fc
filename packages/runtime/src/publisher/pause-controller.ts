/**
 * Pause and resume (docs/semantics.md X4), behind the `pause`, `resume` and
 * `listPaused` of the server, the publishers and their typed handles:
 * checks the target, refuses a name the namespace does not know, and writes
 * through `backend.control`.
 *
 * Semantics, the same on both backends:
 * - `pause({ jobType })` / `pause({ topic })` stores the pause in the
 *   database; every server of the namespace honours it within one poll
 *   interval (it reads the paused set at most that often, `PauseWatch`): no
 *   new claim of the type (or of any job of the topic's partitions) starts;
 *   running jobs finish and write their outcome; enqueue still works, so
 *   jobs accumulate. A paused job type that heads a partition holds that
 *   partition (its order is kept).
 * - `resume(...)` deletes it and wakes every server at once (PostgreSQL:
 *   the wake-up `pg_notify`; SQLite: other processes' WAL watchers see the
 *   commit; this process's server directly).
 * - Both resolve `true` when they changed something and `false` when the
 *   target already was so (idempotent: pausing twice keeps the first
 *   `pausedAt`).
 * - A job type is known when this process handles or declares it, a server
 *   of the namespace lists it, or a job or schedule of it is stored; a topic
 *   when it is registered. An unknown one is `JobTypeNotFoundError`
 *   (`JOB_TYPE_NOT_FOUND`) or `UnknownTopicError` (`UNKNOWN_TOPIC`), and
 *   nothing is written. A resume of a target that is paused always works,
 *   known or not any more.
 */
import type { Backend, PauseTargetRef } from "../backend/backend.js";
import { describeValue, InvalidArgumentError, JobTypeNotFoundError, UnknownTopicError } from "../errors.js";

/** What `pause` and `resume` take: one job type, or one topic. The generated module narrows both to the schema's names. */
export type PauseTarget<J extends string = string, T extends string = string> = { jobType: J; topic?: never } | { topic: T; jobType?: never };

/** One paused job type or topic, and when it was paused (ms since the epoch, the pausing process's clock). */
export type PausedEntry = ({ jobType: string } | { topic: string }) & { pausedAt: number };

/**
 * Told after each pause or resume that changed something (the server reads the paused set again and wakes its loops);
 * `pause` and `resume` resolve once what it returns has (a server: once its own claims honour the change).
 */
export type PauseListener = (target: PauseTargetRef, paused: boolean) => void | Promise<void>;

export class PauseController {
  constructor(
    private readonly backend: Backend<unknown>,
    /** The time written as `pausedAt` (ms since the epoch). */
    private readonly now: () => number,
    /** The job types this process handles or declares: known without a read. */
    private readonly localTypes: ReadonlySet<string> | { has(type: string): boolean },
    private readonly onChange: PauseListener,
  ) {}

  /** Pauses a job type or a topic; true when it was not paused (see the module doc). */
  pause(target: PauseTarget): Promise<boolean> {
    return this.set("pause", target, true);
  }

  /** Resumes a job type or a topic; true when it was paused (see the module doc). */
  resume(target: PauseTarget): Promise<boolean> {
    return this.set("resume", target, false);
  }

  /** Every paused job type and topic of the namespace, job types first (see the module doc). */
  async listPaused(): Promise<PausedEntry[]> {
    const list = await this.backend.control.pausedList();
    const entry = (p: (typeof list)[number]): PausedEntry =>
      p.kind === "type" ? { jobType: p.name, pausedAt: p.pausedAt } : { topic: p.name, pausedAt: p.pausedAt };
    return [...list.filter((p) => p.kind === "type"), ...list.filter((p) => p.kind === "topic")].map(entry);
  }

  private async set(action: "pause" | "resume", target: PauseTarget, paused: boolean): Promise<boolean> {
    const ref = pauseTargetRef(action, target);
    // A pause of a typo writes nothing; a resume looks at the row first, so a paused name always resumes.
    if (paused) await this.checkKnown(action, ref);
    const changed = await this.backend.control.pauseSet({ ...ref, paused, now: this.now() });
    if (!changed && !paused) await this.checkKnown(action, ref);
    if (changed) await this.onChange(ref, paused);
    return changed;
  }

  private async checkKnown(action: string, ref: PauseTargetRef): Promise<void> {
    if (ref.kind === "type" && this.localTypes.has(ref.name)) return;
    if (await this.backend.control.pauseTargetKnown(ref)) return;
    if (ref.kind === "type") throw new JobTypeNotFoundError(ref.name, action);
    throw new UnknownTopicError(ref.name, undefined, `${action}: topic "${ref.name}" is not registered in this namespace; nothing was changed`);
  }
}

/** The stored form of a target; `InvalidArgumentError` naming the field for anything but `{ jobType }` or `{ topic }` with a non-empty string. */
export function pauseTargetRef(action: string, target: PauseTarget): PauseTargetRef {
  if (target === null || typeof target !== "object")
    throw new InvalidArgumentError(`${action}: the target is { jobType } or { topic }, got ${describeValue(target)}`);
  const { jobType, topic } = target as { jobType?: unknown; topic?: unknown };
  if ((jobType === undefined) === (topic === undefined))
    throw new InvalidArgumentError(`${action}: the target names exactly one of jobType and topic, got ${jobType === undefined ? "neither" : "both"}`);
  const [field, name] = jobType !== undefined ? ["jobType", jobType] : ["topic", topic];
  if (typeof name !== "string" || name === "") throw new InvalidArgumentError(`${action}: ${field} must be a non-empty string, got ${describeValue(name)}`);
  return { kind: field === "jobType" ? "type" : "topic", name };
}
