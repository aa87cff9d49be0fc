/**
 * D1/D7: the overview every open page polls, computed once at a time and
 * served for a second to every page.
 *
 * Each part is a few small reads whatever the backlog: the stage counters,
 * the activity buckets of the last minute (throughput and dispatch wait,
 * written with the transitions), the live servers' heartbeats (and the
 * job types they handle, against a bounded window of the oldest ready
 * jobs: the unhandled types), the limits rows (X9: with any, the running
 * jobs by type and the same window), the topic
 * counters and the retained log's offset rows, the database size. Still,
 * twenty pages polling every second would run them twenty times a second,
 * so {@link OverviewSnapshot} keeps the last result for
 * {@link SNAPSHOT_TTL_MS} by the dashboard's clock, and a request that
 * arrives while one is being computed waits for that one instead of
 * starting another.
 */
import type { ActivityBucket, Backend, DispatchWaitBucket, GroupEntry, LimitEntry, WorkerEntry } from "../backend/backend.js";
import type { Clock } from "../core/clock.js";
import { JOB_STAGES, type JobStage } from "../core/job-stage.js";

/** How long one overview is served, ms. */
export const SNAPSHOT_TTL_MS = 1_000;

/** The window of `throughput` and `dispatchWait`, s. */
export const THROUGHPUT_WINDOW_S = 60;

/** Every stage the page shows a count for: every stage, `cancelled` (X3) included. */
export const OVERVIEW_STAGES: readonly JobStage[] = JOB_STAGES;
export type OverviewStage = JobStage;

/** Claims and their wait (claim time minus when the job became ready) over the window. */
export interface DispatchWait {
  /** Mean wait, ms; null when nothing was claimed in the window. */
  avgMs: number | null;
  /** Longest wait, ms; null when nothing was claimed. */
  maxMs: number | null;
  /** Claims in the window. */
  claims: number;
}

/** A topic badge: a job topic (partitioned jobs) or a retained-log topic. */
export interface OverviewTopic {
  name: string;
  /** `"jobs"`: a topic of partitioned jobs; `"log"`: a retained-log topic (the two may share a name). */
  kind: "jobs" | "log";
  partitions: number;
  /** Jobs topic: unfinished jobs over its partitions. Log topic: records retained. */
  depth: number;
  /** Jobs topic: unfinished jobs of each partition, by partition. */
  partitionDepths?: { partition: number; depth: number }[];
  /** Log topic with consumer groups: records not yet committed, summed over its groups and partitions. Absent otherwise. */
  lag?: number;
  /** Log topic with consumer groups: each group's lag, by group. */
  groups?: { group: string; lag: number }[];
}

/** How many of a group-limited type's busiest groups the overview lists (X9). */
export const BUSIEST_GROUPS = 5;

/**
 * X9: one limited job type as the overview (and `GET api/limits`) reports
 * it: `inspect.limitList`'s entry and, for a type with a
 * `groupConcurrency`, its {@link BUSIEST_GROUPS} busiest groups
 * (`inspect.groupList`: most running plus waiting first).
 */
export interface OverviewLimit extends LimitEntry {
  /** With a `groupConcurrency` only: the busiest groups. */
  groups?: GroupEntry[];
  /** With `groups`: false when a group's `waiting` is a lower bound or a busy group may be missing. */
  groupsComplete?: boolean;
}

/** `GET api/overview` (D1). */
export interface Overview {
  /** When this snapshot was computed, ms since the epoch (the dashboard's clock). */
  at: number;
  /** Jobs per stage, from the stage counters. */
  counts: Record<OverviewStage, number>;
  /** Transitions into each stage over the last `windowS` seconds (divide by `windowS` for a rate). */
  throughput: { windowS: number; byStage: Record<OverviewStage, number> };
  dispatchWait: { regular: DispatchWait; partitioned: DispatchWait };
  /** Live servers (heartbeat not expired). */
  workers: WorkerEntry[];
  topics: OverviewTopic[];
  /** Size of the database on disk in bytes; null when unknown. */
  databaseBytes: number | null;
  /**
   * Job types with ready jobs and no live server handling them (no live
   * server published the type with its heartbeat), most jobs first; empty
   * when every ready type has a handler. Read from the oldest ready jobs
   * (see `inspect.unhandledJobTypes`): `ready` is exact when
   * `unhandledComplete`, else a lower bound.
   */
  unhandled: { jobType: string; ready: number }[];
  unhandledComplete: boolean;
  /**
   * X9: every job type with a stored limit, by type: running against
   * `concurrency`, starts in the current window against `rateLimit.max`,
   * and the ready jobs the limit holds back (see `inspect.limitList`);
   * empty when no limit is stored. `ready` and `waiting` are exact when
   * `limitsComplete`, else lower bounds. A type with a `groupConcurrency`
   * also lists its busiest groups ({@link OverviewLimit}).
   */
  limits: OverviewLimit[];
  limitsComplete: boolean;
}

/** The one overview being served (see the module doc). */
export class OverviewSnapshot {
  private current: Overview | null = null;
  private computing: Promise<Overview> | null = null;

  constructor(
    private readonly backend: Backend<unknown>,
    private readonly clock: Clock,
  ) {}

  /** The overview at most {@link SNAPSHOT_TTL_MS} old; one computation at a time. A failed computation is not kept: the next call tries again. */
  get(): Promise<Overview> {
    const now = this.clock.now();
    if (this.current && now - this.current.at < SNAPSHOT_TTL_MS && now >= this.current.at) return Promise.resolve(this.current);
    if (!this.computing) {
      this.computing = computeOverview(this.backend, now).then(
        (overview) => {
          this.current = overview;
          this.computing = null;
          return overview;
        },
        (error: unknown) => {
          this.computing = null;
          throw error;
        },
      );
    }
    return this.computing;
  }
}

/** Reads every part of the overview at `now` (the parts in parallel). */
export async function computeOverview(backend: Backend<unknown>, now: number): Promise<Overview> {
  const { inspect } = backend;
  const [stageCounts, activity, workers, topics, databaseBytes, unhandled, limits] = await Promise.all([
    inspect.stageCounts(),
    inspect.activityList({ sinceMs: now - THROUGHPUT_WINDOW_S * 1_000 }),
    inspect.workerList({ nowMs: now }),
    topicBadges(backend),
    inspect.databaseBytes(),
    inspect.unhandledJobTypes({ nowMs: now }),
    inspect.limitList({ nowMs: now }),
  ]);
  const counts = zeroByStage();
  for (const stage of JOB_STAGES) counts[stage] = stageCounts.counts[stage] ?? 0;
  return {
    at: now,
    counts,
    throughput: { windowS: THROUGHPUT_WINDOW_S, byStage: throughputByStage(activity.buckets) },
    dispatchWait: {
      regular: dispatchWait(activity.buckets.map((b) => b.regular)),
      partitioned: dispatchWait(activity.buckets.map((b) => b.partitioned)),
    },
    workers: workers.workers,
    topics,
    databaseBytes,
    unhandled: unhandled.jobTypes,
    unhandledComplete: unhandled.complete,
    limits: await withBusiestGroups(backend, limits.limits, now),
    limitsComplete: limits.complete,
  };
}

/** The limits, each with a `groupConcurrency` given its busiest groups (one bounded read per such type, in parallel). */
async function withBusiestGroups(backend: Backend<unknown>, limits: readonly LimitEntry[], now: number): Promise<OverviewLimit[]> {
  return Promise.all(
    limits.map(async (l): Promise<OverviewLimit> => {
      if (l.groupConcurrency === null) return l;
      const { groups, complete } = await backend.inspect.groupList({ jobType: l.jobType, nowMs: now, limit: BUSIEST_GROUPS });
      return { ...l, groups, groupsComplete: complete };
    }),
  );
}

function zeroByStage(): Record<OverviewStage, number> {
  return Object.fromEntries(OVERVIEW_STAGES.map((s) => [s, 0])) as Record<OverviewStage, number>;
}

function throughputByStage(buckets: readonly ActivityBucket[]): Record<OverviewStage, number> {
  const byStage = zeroByStage();
  for (const bucket of buckets) {
    for (const [stage, n] of Object.entries(bucket.entered) as [JobStage, number][]) byStage[stage] = (byStage[stage] ?? 0) + n;
  }
  return byStage;
}

function dispatchWait(buckets: readonly DispatchWaitBucket[]): DispatchWait {
  let claims = 0;
  let total = 0;
  let max = 0;
  for (const b of buckets) {
    claims += b.claims;
    total += b.waitTotalMs;
    max = Math.max(max, b.waitMaxMs);
  }
  return claims === 0 ? { avgMs: null, maxMs: null, claims } : { avgMs: Math.round(total / claims), maxMs: max, claims };
}

/**
 * Job topics from the partition counters (ordered by topic and
 * partition), then log topics with their lag: two
 * statements of the log (every topic's partition offsets, every group
 * partition's commit), whatever the number of groups. A group's lag on a
 * partition is its end minus the group's committed offset (the oldest
 * retained offset when it has none, as `RetainedLog.lag`).
 */
async function topicBadges(backend: Backend<unknown>): Promise<OverviewTopic[]> {
  const [jobPartitions, logTopics, groupRows] = await Promise.all([backend.inspect.partitionDepth(), backend.log.topicList({}), backend.log.groupList({})]);
  const badges: OverviewTopic[] = [];
  for (const p of jobPartitions.partitions) {
    let badge = badges.at(-1);
    if (badge?.name !== p.topic) {
      badge = { name: p.topic, kind: "jobs", partitions: 0, depth: 0, partitionDepths: [] };
      badges.push(badge);
    }
    badge.partitions++;
    badge.depth += p.unfinished;
    badge.partitionDepths!.push({ partition: p.partition, depth: p.unfinished });
  }
  for (const topic of logTopics) {
    const committed = new Map<string, Map<number, number | null>>();
    for (const row of groupRows) {
      if (row.topic !== topic.name) continue;
      const group = committed.get(row.group) ?? new Map<number, number | null>();
      group.set(row.partition, row.committedOffset);
      committed.set(row.group, group);
    }
    const depth = topic.partitionOffsets.reduce((sum, p) => sum + (p.endOffset - p.startOffset), 0);
    const badge: OverviewTopic = { name: topic.name, kind: "log", partitions: topic.partitions, depth };
    if (committed.size > 0) {
      badge.groups = [...committed.entries()]
        .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
        .map(([group, offsets]) => ({
          group,
          lag: topic.partitionOffsets.reduce((sum, p) => sum + Math.max(0, p.endOffset - (offsets.get(p.partition) ?? p.startOffset)), 0),
        }));
      badge.lag = badge.groups.reduce((sum, g) => sum + g.lag, 0);
    }
    badges.push(badge);
  }
  return badges;
}
