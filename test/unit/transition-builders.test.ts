/**
 * The dialect builders of the one transition path (X13): the PostgreSQL
 * tail (counter CTEs, one notify CTE over the waking rows) and the SQLite
 * history SQL, both read from the core table.
 */
import { describe, expect, it } from "vitest";
import { awaitedNotify, transition, transitionTail } from "../../packages/runtime/src/backend/postgres/postgres-transition.js";
import { StageDeltas } from "../../packages/runtime/src/backend/sqlite/sqlite-stage-counters.js";
import { SQLITE_TRANSITIONS, SqliteTransition } from "../../packages/runtime/src/backend/sqlite/sqlite-transition.js";

describe("PostgreSQL transitions", () => {
  it("append the entry, with the note when given", () => {
    const claim = transition({ kinds: "claim", rows: "claimed", leftRows: "ready", from: "stage", to: "'running'", at: "$2::bigint" });
    expect(claim.stage).toBe("stage = 'running'");
    expect(claim.history).toBe(`stages = left(j.stages, -1) || ',["' || 'running' || '",' || $2::bigint || ']]'`);
    const back = transition({ kinds: "release", rows: "rel", from: "'running'", to: "x", at: "$3::bigint", note: "$7::text" });
    expect(back.history).toContain("coalesce(',' || to_json($7::text)::text, '')");
  });

  it("count the moves, the old stages from the locked rows when named", () => {
    const claim = transition({ kinds: "claim", rows: "claimed", leftRows: "ready", from: "stage", to: "'running'", at: "$2::bigint" });
    expect(claim.moves).toContain("SELECT ('running')::text AS stage, topic, partition_no, count(*)::int AS n FROM claimed");
    expect(claim.moves).toContain("SELECT (stage)::text AS stage, topic, partition_no, -count(*)::int AS n FROM ready");
  });

  it("send one wake-up over the rows that entered a waking stage, and refuse a waking statement without a channel", () => {
    const done = transition({ kinds: ["succeed", "requeue", "fail"], rows: "done", from: "'running'", to: "x", at: "$3::bigint" });
    const released = transition({ kinds: "releaseChild", rows: "released", alias: "k", from: "'waiting'", to: "y", at: "$3::bigint" });
    const tail = transitionTail('"later"', "$5", [done, released], ["$7", "$8"]);
    expect(tail).toContain(
      "notified AS (\n  SELECT pg_notify($7, $8) FROM (SELECT 1 FROM done WHERE stage IN ('requeued') UNION ALL SELECT 1 FROM released LIMIT 1) x\n)",
    );
    expect(() => transitionTail('"later"', "$5", [done])).toThrow(/notify/);
    const claim = transition({ kinds: "claim", rows: "c", from: "stage", to: "'running'", at: "$2" });
    expect(transitionTail('"later"', "$1", [claim])).not.toContain("pg_notify");
  });

  it("X2: a wake condition beyond the transitions joins the one wake-up (a keyed job's finish frees its key)", () => {
    const succeeded = transition({ kinds: "succeed", rows: "done", from: "'running'", to: "'success'", at: "$3::bigint" });
    const keyed = "SELECT 1 FROM done WHERE unique_key IS NOT NULL";
    expect(transitionTail('"later"', "$5", [succeeded], ["$6", "$7"], keyed)).toContain(
      `notified AS (\n  SELECT pg_notify($6, $7) FROM (${keyed} LIMIT 1) x\n)`,
    );
    expect(() => transitionTail('"later"', "$5", [succeeded], undefined, keyed)).toThrow(/notify/);
  });

  it("X2: a replace appends its entry only when the stage changes", () => {
    const replaced = transition({ kinds: "replace", rows: "u", from: "was", to: "$5", at: "$9::bigint" });
    expect(replaced.historyIfMoved).toBe(`stages = CASE WHEN j.stage <> $5 THEN ${replaced.append("j.stages")} ELSE j.stages END`);
    expect(() => transition({ kinds: "replace", rows: "u", from: "'running'", to: "$5", at: "$9" })).toThrow(/not a legal "from"/);
  });

  it("cancel (X3): history with the reason's note, counted from the old stages, woken by partitioned rows only", () => {
    const cancelled = transition({
      kinds: ["cancel", "cancelChild"],
      rows: "cancelled",
      from: "old_stage",
      to: "'cancelled'",
      at: "$3::bigint",
      note: "$5::text",
    });
    expect(cancelled.stage).toBe("stage = 'cancelled'");
    expect(cancelled.history).toContain("coalesce(',' || to_json($5::text)::text, '')");
    expect(cancelled.moves).toContain("SELECT (old_stage)::text AS stage, topic, partition_no, -count(*)::int AS n FROM cancelled");
    expect(cancelled.wake).toBe("SELECT 1 FROM cancelled WHERE topic IS NOT NULL");
    expect(transitionTail('"later"', "$1", [cancelled], ["$6", "$7"])).toContain(
      "notified AS (\n  SELECT pg_notify($6, $7) FROM (SELECT 1 FROM cancelled WHERE topic IS NOT NULL LIMIT 1) x\n)",
    );
    expect(() => transitionTail('"later"', "$1", [cancelled])).toThrow(/notify/);
    expect(() => transition({ kinds: "cancelChild", rows: "c", from: "'running'", to: "'cancelled'", at: "$2" })).toThrow(/not a legal "from"/);
  });

  it("build the done-channel notify (X6) apart from the wake-up: awaited rows only, once per statement", () => {
    expect(awaitedNotify("done", "$9", "stage <> 'requeued'")).toBe(`, woken AS (
  SELECT pg_notify($9, '') FROM done WHERE awaited AND stage <> 'requeued' LIMIT 1
)`);
    expect(awaitedNotify("failed", "$6")).toContain("FROM failed WHERE awaited AND true LIMIT 1");
  });

  it("refuse a literal stage the kind cannot enter or leave", () => {
    expect(() => transition({ kinds: "claim", rows: "c", from: "stage", to: "'success'", at: "$2" })).toThrow(/not a legal "to"/);
    expect(() => transition({ kinds: "succeed", rows: "c", from: "'waiting'", to: "'success'", at: "$2" })).toThrow(/not a legal "from"/);
  });
});

describe("SQLite transitions", () => {
  it("write the history SQL the statements always wrote", () => {
    expect(SQLITE_TRANSITIONS.claim.history).toBe("stages = json_insert(stages, '$[#]', json_array('running', CAST(? AS INTEGER)))");
    expect(SQLITE_TRANSITIONS.failPermanent.history).toBe("stages = json_insert(stages, '$[#]', json_array('failed', CAST(? AS INTEGER), 'permanent'))");
    expect(SqliteTransition.first("enqueued", 5)).toBe('[["enqueued",5]]');
    expect(() => new SqliteTransition("claim", { to: "'failed'" })).toThrow(/not entered/);
  });

  it("count rows into the transaction's deltas, and say whether the kind wakes", () => {
    const deltas = new StageDeltas();
    SQLITE_TRANSITIONS.releaseChild.count(deltas, [{ stage: "delayed", topic: "t", partition_no: 1 }], "waiting");
    expect(Object.fromEntries(deltas.stages)).toEqual({ waiting: -1, delayed: 1 });
    expect(SQLITE_TRANSITIONS.releaseChild.wakes).toBe(true);
    expect(SQLITE_TRANSITIONS.succeed.wakes).toBe(false);
    expect(SQLITE_TRANSITIONS.cancel.wakes).toBe(true); // a partition may go on (X3)
  });

  it("cancel (X3): plain, or noted with the reason bound after the time", () => {
    expect(SQLITE_TRANSITIONS.cancel.history).toBe("stages = json_insert(stages, '$[#]', json_array('cancelled', CAST(? AS INTEGER)))");
    expect(SQLITE_TRANSITIONS.cancelChildReason.history).toBe("stages = json_insert(stages, '$[#]', json_array('cancelled', CAST(? AS INTEGER), ?))");
    const deltas = new StageDeltas();
    SQLITE_TRANSITIONS.cancelChild.count(deltas, [{ id: "k", topic: null, partition_no: null }], "waiting", "cancelled");
    expect(Object.fromEntries(deltas.stages)).toEqual({ waiting: -1, cancelled: 1 });
  });
});
