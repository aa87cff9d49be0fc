/**
 * A producer that keeps enqueuing, in the test process, through database
 * restarts and outages, and knows exactly which jobs it stored.
 *
 * Every `intervalMs` it inserts one batch: `partitioned` jobs of job type
 * "work" on the topic, keys `k0..k<keys-1>` in turn, each with the next
 * number of its key (payload `{ key, n }`), then `plain` jobs (payload
 * `{ n }`). A batch that fails with `DATABASE_UNAVAILABLE` may still have
 * committed (the reply was lost), so before writing it again, with the same
 * ids, the producer looks its first job up, and tries that until the
 * database answers. Batches go in one at a time, so every key's numbers are
 * stored in order.
 *
 * ```text
 *   start() ──► producing ──pause()──► paused ──resume()──► producing
 *   stop() from any state ──► stopped (resolves once the batch in flight is stored)
 * ```
 */
import { newJobId, partitionForKey, RetryPolicy } from "@later/runtime";
import type { Backend, JobInsert } from "@later/runtime/internal";

export interface JobProducerOptions {
  backend: Backend;
  topic: { name: string; partitions: number };
  keys: number;
  /** Partitioned jobs per batch. */
  partitioned: number;
  /** Plain jobs per batch. */
  plain: number;
  intervalMs: number;
}

export class JobProducer {
  /** Ids of every job stored, in insert order. */
  readonly ids: string[] = [];
  /** Inserts that failed with DATABASE_UNAVAILABLE (and were looked up, then written again or found stored). */
  unavailable = 0;
  /** Inserts that failed otherwise: a finding (none should). */
  readonly otherErrors: string[] = [];
  private readonly next = new Map<string, number>();
  private keyTurn = 0;
  private plainTurn = 0;
  private loop: Promise<void> | null = null;
  private paused = false;
  private stopped = false;
  /** The loop's insert in flight, if any. */
  private inFlight: Promise<void> | null = null;
  private resumeLoop: (() => void) | null = null;

  constructor(private readonly options: JobProducerOptions) {}

  start(): void {
    this.loop ??= this.run();
  }

  /** Stops producing; resolves once the batch in flight (if any) is stored. */
  async pause(): Promise<void> {
    this.paused = true;
    await this.inFlight;
  }

  resume(): void {
    this.paused = false;
    this.resumeLoop?.();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.resumeLoop?.();
    await this.loop;
  }

  /** Stores `jobs` (one insert), riding out an unreachable database as the loop does; their ids join {@link ids}. */
  async insert(jobs: JobInsert[]): Promise<void> {
    const { backend } = this.options;
    let unknown = false;
    for (;;) {
      try {
        if (!unknown || (await backend.inspect.jobGet({ id: jobs[0]!.id })) === null) await backend.jobs.insertMany({ jobs, now: Date.now() });
        break;
      } catch (error) {
        if ((error as { code?: unknown }).code === "DATABASE_UNAVAILABLE") this.unavailable++;
        else this.otherErrors.push(`${(error as Error).message} (${(error as { code?: unknown }).code ?? "no code"})`);
        unknown = true;
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    for (const j of jobs) this.ids.push(j.id);
  }

  private batch(): JobInsert[] {
    const { topic, keys, partitioned, plain } = this.options;
    const now = Date.now();
    const retryPolicy = JSON.stringify(RetryPolicy.fixed(3, 0));
    const jobs: JobInsert[] = [];
    for (let i = 0; i < partitioned; i++) {
      const key = `k${this.keyTurn++ % keys}`;
      const n = this.next.get(key) ?? 0;
      this.next.set(key, n + 1);
      jobs.push({
        id: newJobId(now),
        jobType: "work",
        payload: JSON.stringify({ key, n }),
        runAt: now,
        retryPolicy,
        topic: topic.name,
        partition: partitionForKey(key, topic.partitions),
      });
    }
    for (let i = 0; i < plain; i++)
      jobs.push({ id: newJobId(now), jobType: "work", payload: JSON.stringify({ n: this.plainTurn++ }), runAt: now, retryPolicy });
    return jobs;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      if (this.paused) {
        await new Promise<void>((r) => (this.resumeLoop = r));
        this.resumeLoop = null;
        continue;
      }
      this.inFlight = this.insert(this.batch());
      await this.inFlight;
      this.inFlight = null;
      if (!this.paused && !this.stopped) await new Promise((r) => setTimeout(r, this.options.intervalMs));
    }
  }
}
