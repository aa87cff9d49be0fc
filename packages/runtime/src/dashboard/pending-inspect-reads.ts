/**
 * The dashboard reads of `backend.inspect` that the dashboard-data work
 * adds (activity buckets, queue-length samples, live workers, database
 * size, children, list filters by topic, partition and search). Declared
 * here, as agreed, until they are part of `InspectStore`; then this file
 * goes and the dashboard reads `backend.inspect` as it is.
 */
import type { InspectStore, JobListParams, JobRecord } from "../backend/inspect-store.js";
import type { JobId } from "../core/job-id.js";
import type { JobStage } from "../core/job-stage.js";

export interface DispatchWaitBucket {
  claims: number;
  waitTotalMs: number;
  waitMaxMs: number;
}

export interface ActivityBucket {
  at: number;
  entered: Partial<Record<JobStage, number>>;
  regular: DispatchWaitBucket;
  partitioned: DispatchWaitBucket;
}

export interface DashboardInspectReads {
  activityList(params: { sinceMs: number }): Promise<{ buckets: ActivityBucket[] }>;
  queueLengthList(params: { sinceMs: number }): Promise<{ samples: { at: number; ready: number; partitionBacklog: number }[] }>;
  workerList(params: {
    nowMs: number;
  }): Promise<{ workers: { instanceId: string; host: string; pid: number; workers: number; busy: number; lastSeenAt: number }[] }>;
  databaseBytes(): Promise<number | null>;
  jobChildren(params: { id: JobId; limit: number }): Promise<{ id: JobId; jobType: string; stage: JobStage }[]>;
  jobList(params: JobListParams & { topic?: string | undefined; partition?: number | undefined; q?: string | undefined }): Promise<JobRecord[]>;
}

/** `backend.inspect` with the dashboard reads. */
export type DashboardInspect = Omit<InspectStore, "jobList"> & DashboardInspectReads;

export function dashboardInspect(inspect: InspectStore): DashboardInspect {
  return inspect as unknown as DashboardInspect;
}
