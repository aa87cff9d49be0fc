/**
 * Jobs as the JSON API shows them: a list entry (D2, no payload) and the
 * detail (D3). Ids are full ids; the page abbreviates them.
 */
import type { JobRecord } from "../backend/inspect-store.js";
import type { JobId } from "../core/job-id.js";
import { TERMINAL_STAGES, type JobStage, type StageChange } from "../core/job-stage.js";

/** One job of `GET api/jobs` (D2). `topic` and `partition` only for a partitioned job. */
export interface DashboardJobListEntry {
  id: JobId;
  jobType: string;
  stage: JobStage;
  attempt: number;
  /** When it is (or was) due, ms since the epoch. */
  runAt: number;
  /** Its last change, ms since the epoch. */
  updatedAt: number;
  topic?: string;
  partition?: number;
}

/** `GET api/jobs/{id}` (D3). */
export interface DashboardJobDetail {
  id: JobId;
  jobType: string;
  stage: JobStage;
  attempt: number;
  runAt: number;
  createdAt: number;
  updatedAt: number;
  /** The stage history, oldest first. */
  stages: StageChange[];
  durations: JobDurations;
  /** The job's parent (a continuation's), else empty. */
  parentIds: JobId[];
  /** Its continuations, oldest first, at most {@link DETAIL_CHILDREN}. */
  children: { id: JobId; jobType: string; stage: JobStage }[];
  /** The last attempt's error, kept until the next attempt ends; null when none failed. */
  error: string | null;
  /** The last value an attempt reported with `ctx.progress(value)` (X8), decoded; null when none did. */
  progress: unknown;
  /** The handler's result (X6), decoded; null when it returned none (or the job has not succeeded). */
  result: unknown;
  topic: string | null;
  partition: number | null;
  seq: number | null;
  /** X1: the job's priority (lower claimed first; 0 by default). */
  priority: number;
  /** X2: the job's unique key, kept after it finished; null when none was given. */
  uniqueKey: string | null;
  /**
   * X2: the key's slot the job holds: `pending` (not started), `active`
   * (started, unfinished); null once it finished (the key is free) or without a key.
   */
  uniqueSlot: "pending" | "active" | null;
  /** X9: the job's group (`EnqueueOptions.group`); null when none was given. */
  group: string | null;
  /** X10: the metadata the enqueue middleware stored (e.g. tracing's `traceparent`), decoded; null when none was. */
  meta: Record<string, unknown> | null;
}

/**
 * From the stage history: `totalMs` from creation to the end (a terminal
 * stage) or to now; `processingMs` the time spent `running`, over every
 * attempt; `waitingMs` the rest (queued, delayed, waiting for a parent,
 * requeued for a retry).
 */
export interface JobDurations {
  totalMs: number;
  processingMs: number;
  waitingMs: number;
}

/** Children shown in the detail. */
export const DETAIL_CHILDREN = 25;

export function jobListEntry(job: JobRecord): DashboardJobListEntry {
  const entry: DashboardJobListEntry = {
    id: job.id,
    jobType: job.jobType,
    stage: job.stage,
    attempt: job.attempt,
    runAt: job.runAt,
    updatedAt: job.updatedAt,
  };
  if (job.topic !== null) entry.topic = job.topic;
  if (job.partition !== null) entry.partition = job.partition;
  return entry;
}

export function jobDetail(job: JobRecord, children: DashboardJobDetail["children"], now: number): DashboardJobDetail {
  return {
    id: job.id,
    jobType: job.jobType,
    stage: job.stage,
    attempt: job.attempt,
    runAt: job.runAt,
    createdAt: job.createdAt,
    updatedAt: job.updatedAt,
    stages: job.stages,
    durations: jobDurations(job, now),
    parentIds: job.parentId === null ? [] : [job.parentId],
    children,
    error: job.lastError,
    progress: job.progress === null ? null : JSON.parse(job.progress),
    result: job.result === null ? null : JSON.parse(job.result),
    topic: job.topic,
    partition: job.partition,
    seq: job.seq,
    priority: job.priority,
    uniqueKey: job.uniqueKey,
    uniqueSlot: job.uniqueSlot,
    group: job.group,
    meta: job.meta === null ? null : (JSON.parse(job.meta) as Record<string, unknown>),
  };
}

export function jobDurations(job: Pick<JobRecord, "stage" | "stages" | "createdAt" | "updatedAt">, now: number): JobDurations {
  const finished = TERMINAL_STAGES.includes(job.stage);
  const end = finished ? (job.stages.at(-1)?.at ?? job.updatedAt) : Math.max(now, job.updatedAt);
  let processingMs = 0;
  job.stages.forEach((change, i) => {
    if (change.stage !== "running") return;
    const next = job.stages[i + 1]?.at ?? end;
    processingMs += Math.max(0, next - change.at);
  });
  const totalMs = Math.max(0, end - job.createdAt);
  processingMs = Math.min(processingMs, totalMs);
  return { totalMs, processingMs, waitingMs: totalMs - processingMs };
}
