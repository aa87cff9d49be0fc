/**
 * The page's side of the JSON API (docs/semantics.md D1–D5). Every URL is relative
 * (`api/overview`), so the page works under whatever base path the
 * dashboard is mounted at, as long as the page's own URL ends with "/".
 */

export type Stage = "enqueued" | "delayed" | "waiting" | "running" | "requeued" | "success" | "failed" | "cancelled";

/** Every stage the page shows, in lifecycle order. */
export const STAGES: readonly Stage[] = ["enqueued", "delayed", "waiting", "running", "requeued", "success", "failed", "cancelled"];

/** The stages the job list filters by: every one, `cancelled` (X3) included. */
export const FILTER_STAGES: readonly Stage[] = STAGES;

export interface DispatchWait {
  avgMs: number | null;
  maxMs: number | null;
  claims?: number;
}

/** One second of activity: transitions into each stage, and the claims with their dispatch wait. */
export interface ActivityBucket {
  at: number;
  entered: Partial<Record<Stage, number>>;
  regular?: { claims: number; waitTotalMs: number; waitMaxMs: number };
  partitioned?: { claims: number; waitTotalMs: number; waitMaxMs: number };
}

export interface OverviewTopic {
  name: string;
  kind?: "jobs" | "log";
  partitions: number;
  depth: number;
  lag?: number;
  groups?: { group: string; lag: number }[];
  /** Unfinished jobs per partition, when the API sends them. */
  partitionDepths?: { partition: number; depth: number }[];
}

export interface Worker {
  instanceId: string;
  host: string;
  pid: number;
  workers: number;
  busy: number;
  lastSeenAt: number;
}

/** `GET api/overview` (D1). */
export interface Overview {
  at?: number;
  counts: Partial<Record<Stage, number>>;
  throughput: {
    windowS: number;
    /** Transitions into each stage over the window. */
    byStage: Partial<Record<Stage, number>>;
  };
  dispatchWait: { regular: DispatchWait; partitioned: DispatchWait };
  workers: Worker[];
  topics: OverviewTopic[];
  databaseBytes: number | null;
  /** Job types with ready jobs that no live server handles (absent from an older API: none). */
  unhandled?: { jobType: string; ready: number }[];
  /** False: each `ready` of `unhandled` is a lower bound. */
  unhandledComplete?: boolean;
  /** True: actions are refused, so the page draws no action button. */
  readOnly?: boolean;
  /** X4: the paused job types and topics (absent from an older API: none). */
  paused?: { jobType?: string; topic?: string; pausedAt: number }[];
  /** X9: the limited job types (absent from an older API: none). */
  limits?: LimitEntry[];
  /** False: each `ready` and `waiting` of `limits` is a lower bound. */
  limitsComplete?: boolean;
}

/** X9: one limited job type, as the overview (and `GET api/limits`) reports it. */
export interface LimitEntry {
  jobType: string;
  concurrency: number | null;
  /** At most this many running per group; null: none (absent from an older API). */
  groupConcurrency?: number | null;
  rateLimit: { max: number; perMs: number } | null;
  /** Running now, every server's. */
  running: number;
  /** Starts in the rate window ending now. */
  startsInWindow: number;
  /** Due ready jobs of the type. */
  ready: number;
  /** Of `ready`, those the limit holds back now. */
  waiting: number;
  /** With a `groupConcurrency`: the busiest groups (most running plus waiting first); absent otherwise. */
  groups?: { group: string; running: number; waiting: number }[];
  /** False: a group's `waiting` is a lower bound, and a busy group may be missing. */
  groupsComplete?: boolean;
}

/** What `pause` and `resume` act on. */
export type PauseTargetJson = { jobType: string } | { topic: string };

/** One job of a list page (D2). */
export interface JobListEntry {
  id: string;
  jobType: string;
  stage: Stage;
  attempt: number;
  runAt: number;
  updatedAt: number;
  topic?: string | null;
  partition?: number | null;
}

export interface JobPage {
  jobs: JobListEntry[];
  nextCursor: string | null;
}

/** `GET api/jobs/{id}` (D3). */
export interface JobDetail {
  id: string;
  jobType: string;
  stage: Stage;
  attempt: number;
  runAt?: number;
  createdAt?: number;
  updatedAt?: number;
  /** `note`: only on a noted change (`shutdown`, `permanent`; docs/semantics.md J1). */
  stages: { stage: Stage; at: number; note?: string }[];
  durations: { totalMs: number; processingMs: number; waitingMs: number };
  parentIds: string[];
  children: { id: string; jobType: string; stage: Stage }[];
  error: string | null;
  progress: unknown;
  result: unknown;
  topic: string | null;
  partition: number | null;
  seq: number | null;
  /** X1: lower is claimed first; 0 by default. Absent from an older dashboard. */
  priority?: number;
  /** X2: the unique key, null when none was given. */
  uniqueKey?: string | null;
  /** X2: the key's slot the job holds; null once finished or without a key. */
  uniqueSlot?: "pending" | "active" | null;
  /** X9: the job's group; null when none was given. Absent from an older dashboard. */
  group?: string | null;
  /** X10: the metadata the enqueue middleware stored (e.g. `traceparent`); null when none. */
  meta?: Record<string, unknown> | null;
}

/** `GET api/throughput`: per-second activity, oldest first (seconds with nothing are absent). */
export interface Throughput {
  buckets: ActivityBucket[];
}

/** `GET api/queue-length` (D5): per-minute samples, oldest first. */
export interface QueueLength {
  samples: { at: number; ready: number; partitionBacklog: number }[];
}

/** The job list's filter (D2's query parameters). */
export interface JobFilter {
  stage?: Stage | undefined;
  type?: string | undefined;
  topic?: string | undefined;
  partition?: number | undefined;
  /** Id prefix (or job type prefix). */
  q?: string | undefined;
}

/** What an action answered. */
export interface ActionResult {
  count?: number;
}

/** A request the API refused or could not answer; `message` is the API's own (shown as text). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The filter as query parameters (empty ones left out). */
export function filterParams(filter: JobFilter): URLSearchParams {
  const params = new URLSearchParams();
  if (filter.stage) params.set("stage", filter.stage);
  if (filter.type) params.set("type", filter.type);
  if (filter.topic) params.set("topic", filter.topic);
  if (filter.partition !== undefined) params.set("partition", String(filter.partition));
  if (filter.q) params.set("q", filter.q);
  return params;
}

async function request<T>(path: string, init?: RequestInit): Promise<T> {
  let response: Response;
  try {
    response = await fetch(path, { credentials: "same-origin", headers: { accept: "application/json" }, ...init });
  } catch {
    throw new ApiError(0, "NETWORK", "the dashboard did not answer (network error)");
  }
  const text = await response.text();
  let body: unknown = null;
  try {
    body = text === "" ? null : JSON.parse(text);
  } catch {
    body = null;
  }
  if (!response.ok) {
    const error = (body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
    const code = typeof error?.code === "string" ? error.code : `HTTP_${response.status}`;
    const message = typeof error?.message === "string" ? error.message : `${response.status} ${response.statusText}`;
    throw new ApiError(response.status, code, message);
  }
  return body as T;
}

export const api = {
  overview: () => request<Overview>("api/overview"),
  /** Samples since `sinceMs` (the server's clock; it keeps a week). */
  queueLength: (sinceMs: number) => request<QueueLength>(`api/queue-length?since=${Math.max(0, Math.floor(sinceMs))}`),
  /** Per-second buckets since `sinceMs` (the server's clock). */
  throughput: (sinceMs: number) => request<Throughput>(`api/throughput?since=${Math.max(0, Math.floor(sinceMs))}`),
  jobs(filter: JobFilter, limit: number, cursor: string | null): Promise<JobPage> {
    const params = filterParams(filter);
    params.set("limit", String(limit));
    if (cursor) params.set("cursor", cursor);
    return request<JobPage>(`api/jobs?${params}`);
  },
  job: (id: string) => request<JobDetail>(`api/jobs/${encodeURIComponent(id)}`),
  retryJob: (id: string) => request<ActionResult>(`api/jobs/${encodeURIComponent(id)}/retry`, { method: "POST" }),
  deleteJob: (id: string) => request<ActionResult>(`api/jobs/${encodeURIComponent(id)}`, { method: "DELETE" }),
  cancelJob: (id: string) => request<ActionResult>(`api/jobs/${encodeURIComponent(id)}/cancel`, { method: "POST" }),
  /** X4: pauses or resumes a job type or topic. */
  pause: (action: "pause" | "resume", target: PauseTargetJson) =>
    request<{ changed: boolean }>(
      "jobType" in target ? `api/queues/${encodeURIComponent(target.jobType)}/${action}` : `api/topics/${encodeURIComponent(target.topic)}/${action}`,
      { method: "POST" },
    ),
  /** Every job matching the filter's stage and type (D4's bulk actions take no other filter). */
  bulk: (action: "retry" | "delete" | "cancel", filter: Pick<JobFilter, "stage" | "type">) =>
    request<ActionResult>(`api/jobs/${action}?${filterParams({ stage: filter.stage, type: filter.type })}`, { method: "POST" }),
};
