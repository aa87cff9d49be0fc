/**
 * The inspection reads that mean the same on both dialects, written once
 * (see `shared-statement.ts`): one job, and a cursor page of jobs for
 * `later jobs list` and the dashboard.
 */
import type { JobGetParams, JobListParams, JobRecord } from "../backend.js";
import { JOB_RECORD_COLUMNS, jobRecordFromRow } from "./job-rows.js";
import { SharedStatement, unplanned } from "./shared-statement.js";
import { sql } from "kysely";

interface InNamespace {
  namespace: string;
}

export const JOB_GET = new SharedStatement<JobGetParams & InNamespace, JobRecord | null>({
  build: (db, $) => db.selectFrom("later_jobs").select(JOB_RECORD_COLUMNS).where("id", "=", $("id")).where("namespace", "=", $("namespace")),
  read: (rows) => (rows[0] ? jobRecordFromRow(rows[0]) : null),
});

/**
 * A page of jobs by id. The cursor is a plain bound on the primary key in
 * both orders, so either walk is an index range scan. One variant per order
 * and set of filters given.
 *
 * - `topic` (with or without `partition`): `later_jobs_topic_list`
 *   (namespace, topic, id), partitioned jobs only, so a page costs the page
 *   (a partition filter skips the topic's other partitions' rows on the way).
 * - `q`: ids from `q` up to `q` followed by U+FFFF (ids compare bytewise:
 *   SQLite's BINARY, PostgreSQL's "C" collation), or a job type that starts
 *   with `q` (`substr`, so `%` and `_` are plain characters). The primary key
 *   walk serves both: an id prefix costs the page; a job-type prefix costs
 *   the rows walked past until the page is full (no index on job types: one
 *   over every job would cost every PostgreSQL stage change an index entry).
 */
export const JOB_LIST = new SharedStatement<JobListParams & InNamespace, JobRecord[], JobListValues>({
  variant: (p) =>
    [
      p.order === "desc",
      p.stage !== undefined,
      p.jobType !== undefined,
      p.afterId !== undefined,
      p.topic !== undefined,
      p.partition !== undefined,
      p.q !== undefined,
    ].join(),
  values: (p) => ({ ...p, qEnd: p.q === undefined ? undefined : `${p.q}\uffff`, qLength: p.q?.length }),
  build: (db, $, p) => {
    const desc = p.order === "desc";
    let q = db.selectFrom("later_jobs").select(JOB_RECORD_COLUMNS).where("namespace", "=", $("namespace"));
    if (p.stage !== undefined) q = q.where("stage", "=", $("stage"));
    if (p.jobType !== undefined) q = q.where("job_type", "=", $("jobType"));
    if (p.topic !== undefined) q = q.where("topic", "=", $("topic"));
    if (p.partition !== undefined) q = q.where("topic", "is not", null).where("partition_no", "=", $("partition"));
    if (p.q !== undefined)
      q = q.where((eb) =>
        eb.or([
          eb.and([eb("id", ">=", $("q")), eb("id", "<", $("qEnd"))]),
          eb(eb.fn<string>("substr", ["job_type", sql.lit(1), sql`${$("qLength")}`]), "=", $("q")),
        ]),
      );
    if (p.afterId !== undefined) q = q.where("id", desc ? "<" : ">", $("afterId"));
    return q.orderBy("id", desc ? "desc" : "asc").limit(unplanned($("limit")));
  },
  read: (rows) => rows.map(jobRecordFromRow),
});

type JobListValues = JobListParams & InNamespace & { qEnd: string | undefined; qLength: number | undefined };
