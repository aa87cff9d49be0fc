/**
 * A producer that keeps enqueuing, in the test process, through database
 * restarts and outages, and knows exactly which jobs it stored.
 *
 * Every `intervalMs` it inserts one batch: `partitioned` jobs of job type
 * "work" on the topic, keys `k0..k<keys-1>` in turn, each with the next
 * number of its key (payload `{ key, n }`), then `plain` jobs (payload
 * `{ n }`), then (when asked for) `delayed` plain jobs due up to
 * `maxDelayMs` later and `continuations`: plain jobs whose parent is a job of
 * the batch before (any kind; they wait for it to succeed). `work` adds
 * fields to every payload (how its attempts go, for worker-child.mjs). Every
 * choice comes from `random`, so a seeded source makes the batches the same
 * from run to run. A batch that fails with `DATABASE_UNAVAILABLE` may still have
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
  /** Delayed plain jobs per batch, each due a random 0..maxDelayMs after its insert. Default none. */
  delayed?: { count: number; maxDelayMs: number };
  /** Continuations per batch, each of a random job of the previous batch. Default 0. */
  continuations?: number;
  /** Extra payload fields of each job (e.g. worker-child.mjs's `{ fail, ms }`), drawn from `random`. Default none. */
  work?: (random: () => number) => Record<string, unknown>;
  /** The source of every random choice. Default `Math.random`. */
  random?: () => number;
  /** The jobs' retry policy. Default `RetryPolicy.fixed(3, 0)`. */
  retryPolicy?: RetryPolicy;
}

/** What a stored job is, for {@link JobProducer.kinds}. */
export type JobKind = "plain" | "delayed" | "continuation" | "partitioned";

export class JobProducer {
  /** Ids of every job stored, in insert order. */
  readonly ids: string[] = [];
  /** Jobs stored, by kind. */
  readonly kinds: Record<JobKind, number> = { plain: 0, delayed: 0, continuation: 0, partitioned: 0 };
  /** Attempts the stored payloads ask to fail (the sum of their `fail` fields). */
  plannedFailures = 0;
  /** Inserts that failed with DATABASE_UNAVAILABLE (and were looked up, then written again or found stored). */
  unavailable = 0;
  /** Inserts that failed otherwise: a finding (none should). */
  readonly otherErrors: string[] = [];
  private readonly next = new Map<string, number>();
  private keyTurn = 0;
  private plainTurn = 0;
  /** The last batch stored: the parents of the next batch's continuations. */
  private previous: readonly JobInsert[] = [];
  private readonly random: () => number;
  private loop: Promise<void> | null = null;
  private paused = false;
  private stopped = false;
  /** The loop's insert in flight, if any. */
  private inFlight: Promise<void> | null = null;
  private resumeLoop: (() => void) | null = null;

  constructor(private readonly options: JobProducerOptions) {
    this.random = options.random ?? Math.random;
  }

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

  /** Stores `jobs` (one insert), riding out an unreachable database as the loop does; their ids join {@link ids} (`kinds` counts the loop's batches only). */
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

  /** The next batch, and the kind of each of its jobs. */
  private batch(): { jobs: JobInsert[]; kinds: JobKind[] } {
    const { topic, keys, partitioned, plain, delayed, continuations = 0 } = this.options;
    const now = Date.now();
    const retryPolicy = JSON.stringify(this.options.retryPolicy ?? RetryPolicy.fixed(3, 0));
    const jobs: JobInsert[] = [];
    const kinds: JobKind[] = [];
    const payload = (fields: Record<string, unknown>) => {
      const extra = this.options.work?.(this.random) ?? {};
      if (typeof extra.fail === "number") this.plannedFailures += extra.fail;
      return JSON.stringify({ ...fields, ...extra });
    };
    const add = (kind: JobKind, job: Omit<JobInsert, "id" | "jobType" | "retryPolicy">) => {
      jobs.push({ id: newJobId(now), jobType: "work", retryPolicy, ...job });
      kinds.push(kind);
    };
    for (let i = 0; i < partitioned; i++) {
      const key = `k${this.keyTurn++ % keys}`;
      const n = this.next.get(key) ?? 0;
      this.next.set(key, n + 1);
      add("partitioned", { payload: payload({ key, n }), runAt: now, topic: topic.name, partition: partitionForKey(key, topic.partitions) });
    }
    for (let i = 0; i < plain; i++) add("plain", { payload: payload({ n: this.plainTurn++ }), runAt: now });
    for (let i = 0; i < (delayed?.count ?? 0); i++)
      add("delayed", { payload: payload({ n: this.plainTurn++ }), runAt: now + Math.floor(this.random() * (delayed!.maxDelayMs + 1)) });
    // Parents from the batch before, which is stored: a parent in the same insert is not found.
    for (let i = 0; i < continuations && this.previous.length > 0; i++) {
      const parent = this.previous[Math.floor(this.random() * this.previous.length)]!;
      add("continuation", { payload: payload({ n: this.plainTurn++ }), runAt: now, parentId: parent.id });
    }
    return { jobs, kinds };
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      if (this.paused) {
        await new Promise<void>((r) => (this.resumeLoop = r));
        this.resumeLoop = null;
        continue;
      }
      const { jobs, kinds } = this.batch();
      this.inFlight = this.insert(jobs);
      await this.inFlight;
      for (const kind of kinds) this.kinds[kind]++;
      this.previous = jobs;
      this.inFlight = null;
      if (!this.paused && !this.stopped) await new Promise((r) => setTimeout(r, this.options.intervalMs));
    }
  }
}
