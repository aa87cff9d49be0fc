/**
 * The dashboard's statements that mean the same on both dialects, written
 * once (see `shared-statement.ts`; every write returns a column, so SQLite
 * runs it as it runs reads): the reads of `backend.inspect` beyond
 * one job and a page of jobs (children, the oldest ready job, activity
 * buckets, backlog samples, live servers) and the writes of
 * `backend.activity` (server heartbeats, dispatch-wait buckets, backlog
 * samples, the sweeps). Each is one index range read or one upsert.
 */
import { sql } from "kysely";
import type { JobStage } from "../../core/job-stage.js";
import type * as B from "../backend.js";
import { SharedStatement, unplanned } from "./shared-statement.js";
import { claimableStageTerm } from "./stage-list.js";

interface InNamespace {
  namespace: string;
}

/** A job's children by `later_jobs_parent` (SQLite since migration 1, PostgreSQL since migration 8), lowest id first. */
export const JOB_CHILDREN = new SharedStatement<B.JobChildrenParams & InNamespace, B.JobChildEntry[]>({
  build: (db, $) =>
    db
      .selectFrom("later_jobs")
      .select(["id", "job_type", "stage"])
      .where("parent_id", "=", $("id"))
      .where("namespace", "=", $("namespace"))
      .orderBy("id")
      .limit(unplanned($("limit"))),
  read: (rows) => rows.map((r) => ({ id: String(r.id), jobType: String(r.job_type), stage: r.stage as JobStage })),
});

/** The namespace's activity rows since `sinceMs`, by the primary key; grouped into buckets by {@link activityBuckets}. */
export const ACTIVITY_ROWS = new SharedStatement<B.ActivityListParams & InNamespace, B.ActivityListResult>({
  build: (db, $) =>
    db
      .selectFrom("later_activity")
      .select(["at", "series", "n", "total_ms", "max_ms"])
      .where("namespace", "=", $("namespace"))
      .where("at", ">=", $("sinceMs"))
      .orderBy("at"),
  read: (rows) => ({ buckets: activityBuckets(rows) }),
});

/** Activity rows (ordered by `at`) as buckets, one per second that has any. */
function activityBuckets(rows: Record<string, unknown>[]): B.ActivityBucket[] {
  const buckets: B.ActivityBucket[] = [];
  for (const r of rows) {
    const at = Number(r.at);
    let bucket = buckets[buckets.length - 1];
    if (bucket?.at !== at) {
      bucket = { at, entered: {}, regular: emptyWait(), partitioned: emptyWait() };
      buckets.push(bucket);
    }
    const series = String(r.series);
    if (series.startsWith("entered:")) bucket.entered[series.slice("entered:".length) as JobStage] = Number(r.n);
    else if (series === "regular" || series === "partitioned")
      bucket[series] = { claims: Number(r.n), waitTotalMs: Number(r.total_ms), waitMaxMs: Number(r.max_ms) };
  }
  return buckets;
}

function emptyWait(): B.DispatchWaitBucket {
  return { claims: 0, waitTotalMs: 0, waitMaxMs: 0 };
}

export const QUEUE_LENGTH_ROWS = new SharedStatement<B.QueueLengthListParams & InNamespace, B.QueueLengthListResult>({
  build: (db, $) =>
    db
      .selectFrom("later_queue_length")
      .select(["at", "ready", "partition_backlog"])
      .where("namespace", "=", $("namespace"))
      .where("at", ">=", $("sinceMs"))
      .orderBy("at"),
  read: (rows) => ({ samples: rows.map((r) => ({ at: Number(r.at), ready: Number(r.ready), partitionBacklog: Number(r.partition_backlog) })) }),
});

/** The namespace's server rows not yet expired (a few rows: one per server). */
export const WORKER_ROWS = new SharedStatement<B.WorkerListParams & InNamespace, B.WorkerListResult>({
  build: (db, $) =>
    db
      .selectFrom("later_servers")
      .select(["instance_id", "host", "pid", "workers", "busy", "last_seen_at", "job_types"])
      .where("namespace", "=", $("namespace"))
      .where("expires_at", ">", $("nowMs"))
      .orderBy("instance_id"),
  read: (rows) => ({
    workers: rows.map((r) => ({
      instanceId: String(r.instance_id),
      host: String(r.host),
      pid: Number(r.pid),
      workers: Number(r.workers),
      busy: Number(r.busy),
      lastSeenAt: Number(r.last_seen_at),
      jobTypes: jobTypesOf(r.job_types),
    })),
  }),
});

/** The `job_types` column: a JSON array of strings; anything else (never written) reads as none. */
function jobTypesOf(value: unknown): string[] {
  try {
    const parsed: unknown = JSON.parse(String(value));
    return Array.isArray(parsed) ? parsed.filter((t): t is string => typeof t === "string") : [];
  } catch {
    return [];
  }
}

/**
 * The first `window` entries of `later_jobs_ready` that are due (the
 * ready regular jobs a claim takes first: lowest priority, then oldest; the statement repeats
 * the index's predicate), their job type only. A bounded index range read:
 * jobs nothing claims stay at its front, so this is where they show.
 */
export const READY_WINDOW = new SharedStatement<{ namespace: string; nowMs: number; window: number }, string[]>({
  build: (db, $) =>
    db
      .selectFrom("later_jobs")
      .select("job_type")
      .where("namespace", "=", $("namespace"))
      .where(claimableStageTerm(db))
      .where("topic", "is", null)
      .where("run_at", "<=", $("nowMs"))
      // X1: the ready index's order, (priority, run_at): the order a claim walks it, read without a sort.
      .orderBy("priority")
      .orderBy("run_at")
      .limit(unplanned($("window"))),
  read: (rows) => rows.map((r) => String(r.job_type)),
});

/**
 * {@link B.InspectStore.unhandledJobTypes} from its two reads: the live
 * servers (with the job types each published) and the job types of the
 * ready window, counted by type; a type no live server lists is unhandled.
 */
export function unhandledFromReads(workers: B.WorkerListResult, readyTypes: readonly string[], window: number): B.UnhandledJobTypesResult {
  const handled = new Set(workers.workers.flatMap((w) => w.jobTypes));
  const ready = new Map<string, number>();
  for (const type of readyTypes) if (!handled.has(type)) ready.set(type, (ready.get(type) ?? 0) + 1);
  const jobTypes = [...ready].map(([jobType, n]) => ({ jobType, ready: n })).sort((a, b) => b.ready - a.ready || (a.jobType < b.jobType ? -1 : 1));
  return { jobTypes, complete: readyTypes.length < window };
}

// ---- writes (backend.activity) ----------------------------------------------

export const SERVER_HEARTBEAT = new SharedStatement<
  B.ServerHeartbeatParams & InNamespace,
  void,
  B.ServerHeartbeatParams & InNamespace & { jobTypesJson: string }
>({
  values: (p) => ({ ...p, jobTypesJson: JSON.stringify(p.jobTypes) }),
  build: (db, $) =>
    db
      .insertInto("later_servers")
      .values({
        namespace: $("namespace"),
        instance_id: $("instanceId"),
        host: $("host"),
        pid: $("pid"),
        workers: $("workers"),
        busy: $("busy"),
        last_seen_at: $("now"),
        expires_at: $("expiresAt"),
        job_types: $("jobTypesJson"),
      })
      .onConflict((oc) =>
        oc.columns(["namespace", "instance_id"]).doUpdateSet((eb) => ({
          host: eb.ref("excluded.host"),
          pid: eb.ref("excluded.pid"),
          workers: eb.ref("excluded.workers"),
          busy: eb.ref("excluded.busy"),
          last_seen_at: eb.ref("excluded.last_seen_at"),
          expires_at: eb.ref("excluded.expires_at"),
          job_types: eb.ref("excluded.job_types"),
        })),
      )
      .returning("instance_id"),
  read: () => undefined,
});

export const SERVER_REMOVE = new SharedStatement<B.ServerRemoveParams & InNamespace, void>({
  build: (db, $) => db.deleteFrom("later_servers").where("namespace", "=", $("namespace")).where("instance_id", "=", $("instanceId")).returning("instance_id"),
  read: () => undefined,
});

/** Servers whose heartbeat expired before `before` (a crashed process leaves its row). */
export const SERVER_SWEEP = new SharedStatement<{ namespace: string; before: number }, void>({
  build: (db, $) => db.deleteFrom("later_servers").where("namespace", "=", $("namespace")).where("expires_at", "<", $("before")).returning("instance_id"),
  read: () => undefined,
});

/**
 * Adds one server's claims of one second to its bucket: counts and totals
 * add up, the maximum is the larger (a CASE, the same on both dialects:
 * SQLite's two-argument `max` is PostgreSQL's `greatest`).
 */
export const ACTIVITY_ADD = new SharedStatement<{ namespace: string; at: number; series: string; n: number; totalMs: number; maxMs: number }, void>({
  build: (db, $) =>
    db
      .insertInto("later_activity")
      .values({ namespace: $("namespace"), at: $("at"), series: $("series"), n: $("n"), total_ms: $("totalMs"), max_ms: $("maxMs") })
      .onConflict((oc) =>
        oc.columns(["namespace", "at", "series"]).doUpdateSet({
          n: sql`later_activity.n + excluded.n`,
          total_ms: sql`later_activity.total_ms + excluded.total_ms`,
          max_ms: sql`CASE WHEN excluded.max_ms > later_activity.max_ms THEN excluded.max_ms ELSE later_activity.max_ms END`,
        }),
      )
      .returning("at"),
  read: () => undefined,
});

/** One backlog sample per minute: the first writer of a minute wins (a second one, after a turn overlapped, changes nothing). */
export const QUEUE_LENGTH_ADD = new SharedStatement<{ namespace: string; at: number; ready: number; partitionBacklog: number }, void>({
  build: (db, $) =>
    db
      .insertInto("later_queue_length")
      .values({ namespace: $("namespace"), at: $("at"), ready: $("ready"), partition_backlog: $("partitionBacklog") })
      .onConflict((oc) => oc.columns(["namespace", "at"]).doNothing())
      .returning("at"),
  read: () => undefined,
});

/**
 * Deletes the rows older than `before` of a per-namespace time series
 * (`later_activity`, `later_queue_length`), at most `spanMs` of them from
 * the oldest: a short statement each, so the sweep never holds writers
 * long. Resolves to how many rows it deleted; 0 means none older remain.
 */
export function sweepStatement(table: "later_activity" | "later_queue_length") {
  return new SharedStatement<{ namespace: string; before: number; spanMs: number }, number>({
    build: (db, $) =>
      db
        .deleteFrom(table)
        .where("namespace", "=", $("namespace"))
        .where("at", "<", $("before"))
        .where("at", "<", (eb) =>
          eb
            .selectFrom(table)
            .select(sql<number>`min(at) + ${$("spanMs")}`.as("cut"))
            .where("namespace", "=", $("namespace")),
        )
        .returning("at"),
    read: (rows) => rows.length,
  });
}
