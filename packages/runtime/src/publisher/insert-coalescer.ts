import type { JobInsert } from "../backend/backend.js";
import type { JobStage } from "../core/job-stage.js";
import { LaterError } from "../errors.js";

/** Failures of the whole database, which every caller of a batch would have met alone: given to all of them at once. */
const WHOLE_DATABASE = new Set(["DATABASE_UNAVAILABLE", "DATABASE_BUSY", "DATABASE_FULL", "DATABASE_NOT_FOUND", "SCHEMA_VERSION_MISMATCH", "SERVER_STOPPED"]);

/** One caller's jobs waiting for the next insert, and how to answer it. */
interface QueuedInsert<I, R> {
  jobs: readonly I[];
  now: number;
  resolve: (results: R[]) => void;
  reject: (error: unknown) => void;
}

/**
 * Writes a batch of jobs in one statement or transaction (the backend's `insertMany`, or `insertUniqueMany`);
 * resolves to one result per job in order (their stages, or what each unique insert did).
 */
export type InsertBatch<I = JobInsert, R = JobStage> = (jobs: I[], now: number) => Promise<readonly R[]>;

/**
 * Group commit for plain enqueues: the independent enqueues of many callers
 * (a web server enqueuing per request, ten loops of `enqueue`) are written
 * together, one statement and one commit for all of them, instead of one
 * round trip and one commit each.
 *
 * Natural batching, no timer: an enqueue made while no insert is running
 * is written at the end of the current microtask queue, together with every
 * other enqueue made before then (so a lone enqueue waits for nothing); one
 * made while an insert is running waits for it and goes in the next batch,
 * with all the others that arrived meanwhile. At most one insert runs at a
 * time per publisher, and a batch holds at most {@link maxJobs} jobs.
 *
 * What each caller sees is what its own insert would have given: its
 * promise resolves once its jobs committed, with their stages. A batch that
 * fails for the whole database (unavailable, busy, full: a typed error)
 * fails every caller of it with that error; one that fails otherwise is
 * written again caller by caller, so one caller's bad row (a payload the
 * database refuses) fails that caller only; this is safe
 * because a failed insert stored nothing, or (PostgreSQL, a reply lost after
 * the commit) stored rows the second write skips by id (`ON CONFLICT (id) DO
 * NOTHING`): never stored twice either way.
 *
 * Plain jobs come here (no parent, no partition, not in a caller's
 * transaction): those can fail only for the whole database, never because
 * of another row in the batch. The batch's `now` is the latest of its
 * callers' (a job due at its own `now` is never stored `delayed`). So do
 * unique enqueues (X2), each with its own `now`, in a coalescer of their
 * own: the backend fails a batch of them with a plain `Error` when one
 * insert could not be written (its key changed hands too often), so that
 * each is written again alone and only that one's caller fails (a batch
 * partly stored is found again by each job's own id).
 *
 * ```text
 *   add ──► queue ──(microtask, or the running insert ends)──► insert(batch) ──┬─► resolve each caller
 *                                                                              └─► failed: insert each caller alone
 * ```
 */
export class InsertCoalescer<I = JobInsert, R = JobStage> {
  private queue: QueuedInsert<I, R>[] = [];
  private running = false;
  private scheduled = false;

  constructor(
    private readonly insert: InsertBatch<I, R>,
    /** The most jobs one statement carries (a caller's own jobs are never split). */
    private readonly maxJobs = 1000,
  ) {}

  /** Queues `jobs` (one caller's) for the next batch; resolves to their results (stages) once committed. */
  add(jobs: readonly I[], now: number): Promise<R[]> {
    return new Promise<R[]>((resolve, reject) => {
      this.queue.push({ jobs, now, resolve, reject });
      if (this.running || this.scheduled) return;
      this.scheduled = true;
      queueMicrotask(() => {
        this.scheduled = false;
        void this.drain();
      });
    });
  }

  /** Writes batches until the queue is empty; one at a time. */
  private async drain(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.take();
        if (batch.length === 1) await this.writeAlone(batch[0]!);
        else await this.writeBatch(batch);
      }
    } finally {
      this.running = false;
    }
  }

  /** The queue's head callers, up to {@link maxJobs} jobs (at least one caller). */
  private take(): QueuedInsert<I, R>[] {
    let jobs = 0;
    let n = 0;
    while (n < this.queue.length && (n === 0 || jobs + this.queue[n]!.jobs.length <= this.maxJobs)) jobs += this.queue[n++]!.jobs.length;
    return this.queue.splice(0, n);
  }

  private async writeBatch(batch: readonly QueuedInsert<I, R>[]): Promise<void> {
    let results: readonly R[];
    try {
      results = await this.insert(
        batch.flatMap((q) => q.jobs),
        Math.max(...batch.map((q) => q.now)),
      );
    } catch (error) {
      if (error instanceof LaterError && WHOLE_DATABASE.has(error.code)) for (const q of batch) q.reject(error);
      else for (const q of batch) await this.writeAlone(q);
      return;
    }
    let at = 0;
    for (const q of batch) {
      q.resolve(results.slice(at, at + q.jobs.length));
      at += q.jobs.length;
    }
  }

  private async writeAlone(q: QueuedInsert<I, R>): Promise<void> {
    try {
      q.resolve([...(await this.insert([...q.jobs], q.now))]);
    } catch (error) {
      q.reject(error);
    }
  }
}
