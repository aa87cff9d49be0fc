/**
 * The pause statements (docs/semantics.md X4), the same on both dialects and
 * written once (see `shared-statement.ts`): `later_paused` holds one row per
 * paused job type (`kind = 'type'`) or topic (`kind = 'topic'`) of a
 * namespace. Pausing inserts the row (nothing when it is there), resuming
 * deletes it; each reports whether it changed something by the row it
 * returns. No job row is read or written: servers honour the set by leaving
 * paused types and topics out of their claims (`worker/pause-watch.ts`).
 */
import { sql } from "kysely";
import type { PausedTarget, PauseSetParams, PauseTargetRef } from "../backend.js";
import { type RunStatement, SharedStatement, type StatementCompiler } from "./shared-statement.js";

interface InNamespace {
  namespace: string;
}

/** Inserts the pause row; a row comes back only when it was not there (ON CONFLICT DO NOTHING returns none). */
const PAUSE = new SharedStatement<PauseSetParams & InNamespace, boolean>({
  build: (db, $) =>
    db
      .insertInto("later_paused")
      .values({ namespace: $("namespace"), kind: $("kind"), name: $("name"), paused_at: $("now") })
      .onConflict((oc) => oc.columns(["namespace", "kind", "name"]).doNothing())
      .returning("name"),
  read: (rows) => rows.length > 0,
});

/** Deletes the pause row; a row comes back only when there was one. */
const RESUME = new SharedStatement<PauseSetParams & InNamespace, boolean>({
  build: (db, $) =>
    db.deleteFrom("later_paused").where("namespace", "=", $("namespace")).where("kind", "=", $("kind")).where("name", "=", $("name")).returning("name"),
  read: (rows) => rows.length > 0,
});

/** The namespace's paused set: a range of the primary key. */
const PAUSED_LIST = new SharedStatement<InNamespace, PausedTarget[]>({
  build: (db, $) => db.selectFrom("later_paused").select(["kind", "name", "paused_at"]).where("namespace", "=", $("namespace")).orderBy("kind").orderBy("name"),
  read: (rows) => rows.map((r) => ({ kind: String(r.kind) === "topic" ? "topic" : "type", name: String(r.name), pausedAt: Number(r.paused_at) })),
});

/** Whether the topic is registered. */
const TOPIC_KNOWN = new SharedStatement<PauseTargetRef & InNamespace, boolean>({
  build: (db, $) =>
    db.selectFrom("later_topics").select(sql<number>`1`.as("found")).where("namespace", "=", $("namespace")).where("topic", "=", $("name")).limit(sql.lit(1)),
  read: (rows) => rows.length > 0,
});

/** Whether a job or a recurring schedule of the type is stored (each an EXISTS that stops at the first row). */
const TYPE_STORED = new SharedStatement<PauseTargetRef & InNamespace, boolean>({
  build: (db, $) =>
    db.selectNoFrom((eb) => [
      eb
        .or([
          eb.exists(eb.selectFrom("later_jobs").select(sql<number>`1`.as("x")).where("namespace", "=", $("namespace")).where("job_type", "=", $("name"))),
          eb.exists(eb.selectFrom("later_recurring").select(sql<number>`1`.as("x")).where("namespace", "=", $("namespace")).where("job_type", "=", $("name"))),
        ])
        .as("found"),
    ]),
  read: (rows) => rows.length > 0 && Number(rows[0]!.found) === 1,
});

/** The job types every server row of the namespace lists (a few rows; the JSON is read in JavaScript). */
const SERVER_JOB_TYPES = new SharedStatement<InNamespace, Set<string>>({
  build: (db, $) => db.selectFrom("later_servers").select("job_types").where("namespace", "=", $("namespace")),
  read: (rows) => {
    const types = new Set<string>();
    for (const r of rows) {
      try {
        const parsed: unknown = JSON.parse(String(r.job_types));
        if (Array.isArray(parsed)) for (const t of parsed) if (typeof t === "string") types.add(t);
      } catch {
        // never written so: a row that does not parse lists none
      }
    }
    return types;
  },
});

/** The pause statements of one backend: its compiler, how it runs a read and a write, and its namespace. */
export class PauseStatements {
  constructor(
    private readonly db: StatementCompiler,
    private readonly read: RunStatement,
    private readonly write: RunStatement,
    private readonly namespace: string,
  ) {}

  /** Pauses or resumes; true when a row was inserted or deleted. */
  set(params: PauseSetParams): Promise<boolean> {
    return (params.paused ? PAUSE : RESUME).run(this.db, this.write, { ...params, namespace: this.namespace });
  }

  list(): Promise<PausedTarget[]> {
    return PAUSED_LIST.run(this.db, this.read, { namespace: this.namespace });
  }

  async known(ref: PauseTargetRef): Promise<boolean> {
    const params = { kind: ref.kind, name: ref.name, namespace: this.namespace };
    if (ref.kind === "topic") return TOPIC_KNOWN.run(this.db, this.read, params);
    if ((await SERVER_JOB_TYPES.run(this.db, this.read, params)).has(ref.name)) return true;
    return TYPE_STORED.run(this.db, this.read, params);
  }
}
