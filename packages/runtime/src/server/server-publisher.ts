/**
 * A server's own publisher (`server.publisher`) and what a local commit
 * does in this process: the enqueues of this publisher and of the
 * recurring poller wake the local workers and partition runner at once
 * (P7) rather than on their next poll, count `enqueued` in the metrics,
 * note the job types for the unhandled-type warning and emit `job` events;
 * a local pause or resume, retry or cancel reaches the local loops before
 * their next claim (X4, X3).
 */
import type { JobInsert } from "../backend/backend.js";
import type { ResolvedServerOptions } from "../config/server-options.js";
import { jsonPayload } from "../core/encode-payload.js";
import type { JobStage } from "../core/job-stage.js";
import type { ServerMetrics } from "../metrics/server-metrics.js";
import { JobPublisher } from "../publisher/job-publisher.js";
import type { UnhandledJobTypeWarner } from "./unhandled-job-type-warner.js";
import { cancelledMsByType } from "../core/job-retention.js";

/** The local loops a commit or a job action wakes; called lazily (the loops are built after the publisher they use). */
export interface ServerWakeups {
  /** Regular jobs may be ready: the worker pool's fetcher. */
  workers(): void;
  /** Partitioned jobs may be ready: the partition runner (nothing without topics). */
  partitions(): void;
  /** A pause or resume in this process (X4): the paused set read again, every loop woken; resolves once this server's claims honour it. */
  pauseChanged(): Promise<void>;
  /** A cancel in this process (X3): held leases renewed now, so a cancelled attempt here aborts at once. */
  renewNow(): void;
}

/** What a local commit calls: the publisher's `onCommitted`, the recurring poller's too. */
export type CommitListener = (jobs: readonly JobInsert[], stages: readonly JobStage[]) => void;

export interface ServerPublisher<Trx> {
  publisher: JobPublisher<Trx>;
  onCommitted: CommitListener;
}

/**
 * The server's publisher: its handlers' encoders and topics, no default
 * retry policy (a job enqueued without one follows whichever server runs
 * it), the server's middleware; with the listener its recurring poller shares.
 */
export function serverPublisher<C, Trx>(
  options: ResolvedServerOptions<C>,
  recorder: ServerMetrics | null,
  warner: UnhandledJobTypeWarner,
  wake: ServerWakeups,
): ServerPublisher<Trx> {
  const onCommitted: CommitListener = (jobs, stages) => {
    if (stages.includes("enqueued")) wake.workers();
    if (jobs.some((j) => j.topic !== undefined)) wake.partitions();
    if (recorder) for (let i = 0; i < jobs.length; i++) recorder.enqueued(jobs[i]!.jobType, stages[i]!);
    for (const job of jobs) warner.noteEnqueued(job.jobType);
    if (!options.eventsEnabled) return;
    for (const [i, job] of jobs.entries()) options.onEvent({ type: "job", jobId: job.id, jobType: job.jobType, stage: stages[i]!, attempt: 0 });
  };
  const publisher = new JobPublisher<Trx>({
    backend: options.backend,
    clock: options.clock,
    // Not the server's default: a job enqueued without an explicit policy follows whichever server runs it.
    defaultRetryPolicy: null,
    encoders: new Map(Object.entries(options.handlers).map(([type, h]) => [type, h.encode ?? jsonPayload])),
    retentionMs: options.retentionMs,
    cancelledMsByType: cancelledMsByType(options.handlers),
    topics: new Map(options.topics.map((t) => [t.name, t.partitions])),
    onCommitted,
    onReady: () => wake.workers(),
    // X4: this process's pause or resume is seen by its own loops before their next claim, and resolves once the
    // claims under way with the set read before it have settled.
    onPauseChange: () => wake.pauseChanged(),
    middleware: options.middleware,
    onJobAction: (action, jobIds) => {
      if (action === "retry" || action === "cancel") {
        wake.workers();
        wake.partitions();
      }
      if (action === "cancel") wake.renewNow(); // X3: a cancelled attempt of this server aborts at once
      if (options.eventsEnabled) options.onEvent({ type: "job-action", action, jobIds });
    },
  });
  return { publisher, onCommitted };
}
