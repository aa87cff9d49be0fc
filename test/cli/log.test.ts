/**
 * `later log topics|tail|groups|lag` on every backend, the CLI run as a
 * child process against a database a `RetainedLog` wrote (at the times of
 * a manual clock, so output is predictable). `tail --follow` is a running
 * child: the test waits for its output, appends, waits for that record's
 * line, then sends SIGINT and expects exit 0.
 */
import { describe, expect, it } from "vitest";
import { logTopic } from "@later/runtime";
import { BACKENDS } from "../conformance/backends.js";
import { waitFor } from "../conformance/harness.js";
import { useLog } from "../conformance/log-harness.js";
import { later, laterChild } from "./later-cli.js";

describe.each(BACKENDS)("later log on $name", (entry) => {
  const fresh = useLog(entry);

  /** A log with topics "events" (2 partitions, 3 + 1 records) and "audit" (1 partition, empty, retention set). */
  const seeded = async () => {
    const h = await fresh();
    const log = await h.open({
      topics: [logTopic("events", 2), logTopic("audit", 1, { retentionMs: 86_400_000, retainRecords: 500, minRetainUntilCommitted: true })],
    });
    await log.appendMany("events", [
      { key: "order-1", value: "created" } /* partition 0 */,
      { partition: 0, value: new Uint8Array([0xff, 0x00, 0x01]), headers: { trace: "abc" } },
      { key: "order-1", value: "paid" },
      { partition: 1, value: "line one\nline two" },
    ]);
    // The records' timestamp: the manual clock's on SQLite, the database's on PostgreSQL.
    const t0 = (await log.read({ topic: "events", partition: 0, fromOffset: 0, limit: 1 }))[0]!.timestamp.getTime();
    const cli = ["--database", h.db.url, ...(h.db.schema ? ["--schema", h.db.schema] : []), "--namespace", "test"];
    return { h, log, t0, cli };
  };

  it("topics lists each log topic with partitions, records retained and retention settings (the default seven days when none is set)", async () => {
    const { cli } = await seeded();
    const r = later(["log", "topics", ...cli]);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    const lines = r.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^TOPIC +PARTITIONS +RECORDS +RETENTION +RETAIN RECORDS +UNTIL COMMITTED$/);
    expect(lines.slice(1)).toEqual([expect.stringMatching(/^audit +1 +0 +1d +500 +yes$/), expect.stringMatching(/^events +2 +4 +7d \(default\) +- +no$/)]);

    const json = JSON.parse(later(["log", "topics", "--json", ...cli]).stdout) as { name: string; records: number; partitionOffsets: unknown }[];
    expect(json.find((t) => t.name === "events")).toEqual({
      name: "events",
      partitions: 2,
      retentionMs: null,
      retainRecords: null,
      minRetainUntilCommitted: false,
      records: 4,
      partitionOffsets: [
        { partition: 0, startOffset: 0, endOffset: 3 },
        { partition: 1, startOffset: 0, endOffset: 1 },
      ],
    });
    const none = later(["log", "topics", ...cli, "--namespace", "empty"]);
    expect(none.status).toBe(0);
    expect(none.stdout).toMatch(/^no log topics in namespace "empty"/);
  });

  it("tail --from prints records as text (UTF-8, else base64) and as JSON lines", async () => {
    const { h, t0, cli } = await seeded();
    const at = new Date(t0).toISOString();
    const r = later(["log", "tail", "events", "--from", "1", ...cli]);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(0);
    expect(r.stdout.trimEnd().split("\n")).toEqual([`0  1  ${at}  -  base64:/wAB`, `0  2  ${at}  order-1  paid`]);

    const all = later(["log", "tail", "events", ...cli]); // default: the last 10 of each partition
    expect(all.stdout.trimEnd().split("\n")).toEqual([
      `0  0  ${at}  order-1  created`,
      `0  1  ${at}  -  base64:/wAB`,
      `0  2  ${at}  order-1  paid`,
      `1  0  ${at}  -  base64:${Buffer.from("line one\nline two").toString("base64")}`,
    ]);

    const one = later(["log", "tail", "events", "--partition", "0", "--from", "0", "--limit", "2", "--json", ...cli]);
    expect(one.status).toBe(0);
    expect(
      one.stdout
        .trimEnd()
        .split("\n")
        .map((l) => JSON.parse(l)),
    ).toEqual([
      { topic: "events", partition: 0, offset: 0, timestamp: t0, key: "order-1", value: "created", encoding: "utf8", headers: {} },
      { topic: "events", partition: 0, offset: 1, timestamp: t0, key: null, value: "/wAB", encoding: "base64", headers: { trace: "abc" } },
    ]);

    const backend = h.db.backend("test");
    await backend.open();
    try {
      await backend.log.recordTruncate({ topic: "events", partition: 0, beforeOffset: 2 }); // as the retention sweep will
    } finally {
      await backend.close();
    }
    const below = later(["log", "tail", "events", "--from", "1", ...cli]);
    expect(below.status).toBe(1);
    expect(below.stderr.trim()).toMatch(/^later: cannot read topic "events" partition 0 from offset 1: the oldest retained offset is 2 /);
    expect(later(["log", "tail", "events", "--partition", "0", ...cli]).stdout).toBe(`0  2  ${at}  order-1  paid\n`);

    const badPartition = later(["log", "tail", "events", "--partition", "2", ...cli]);
    expect(badPartition.status).toBe(2);
    expect(badPartition.stderr).toMatch(/--partition must be from 0 to 1/);
  });

  it.each(["SIGINT", "SIGTERM"] as const)("tail --follow prints a record appended after it started, and exits 0 on %s", async (signal) => {
    const { log, cli } = await seeded();
    const tail = laterChild(["log", "tail", "events", "--partition", "1", "--from", "0", "--follow", ...cli]);
    const running = (seen: boolean) => {
      if (!seen && tail.child.exitCode !== null) throw new Error(`tail exited ${tail.child.exitCode}: ${tail.stderr()}`);
      return seen;
    };
    await waitFor(() => running(tail.stdout().includes("\n")), "tail's first record", 20_000);
    expect(tail.stdout().trimEnd().split("\n")).toHaveLength(1);
    await log.append("events", { key: "order-2", value: "appended later" } /* partition 1 */);
    await waitFor(() => running(tail.stdout().includes("appended later\n")), "the appended record", 20_000);
    expect(tail.stdout().trimEnd().split("\n")[1]).toMatch(/^1 {2}1 {2}\S+Z {2}order-2 {2}appended later$/);
    tail.child.kill(signal);
    expect(await tail.exited).toBe(0);
    expect(tail.stderr()).toBe("");
  });

  it("groups lists committed offsets, epochs and leases; lag gives end, committed, lag and the total", async () => {
    const { h, log, cli } = await seeded();
    await log.commitOffset({ topic: "events", group: "billing", partition: 0, epoch: 0, offset: 2 });
    await log.commitOffset({ topic: "events", group: "billing", partition: 1, epoch: 0, offset: 1 });
    const until = Date.UTC(2026, 5, 1, 12, 0, 30);
    await h.exec(
      `UPDATE ${h.db.schema ? `"${h.db.schema}".` : ""}later_log_group_partitions SET epoch = 3, lease_owner = 'member-a', lease_expires_at = ${until} WHERE partition_no = 1`,
    );

    const groups = later(["log", "groups", ...cli]);
    expect(groups.stderr).toBe("");
    expect(groups.status).toBe(0);
    const lines = groups.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^TOPIC +GROUP +PARTITION +COMMITTED +EPOCH +OWNER +LEASE UNTIL$/);
    expect(lines.slice(1)).toEqual([
      expect.stringMatching(/^events +billing +0 +2 +0 +- +-$/),
      expect.stringMatching(/^events +billing +1 +1 +3 +member-a +2026-06-01T12:00:30Z$/),
    ]);
    const json = JSON.parse(later(["log", "groups", "events", "--json", ...cli]).stdout);
    expect(json[1]).toEqual({ topic: "events", group: "billing", partition: 1, committedOffset: 1, epoch: 3, leaseOwner: "member-a", leaseExpiresAt: until });
    expect(later(["log", "groups", "audit", ...cli]).stdout).toMatch(/^no consumer groups of log topic "audit"/);

    const lag = later(["log", "lag", "events", "--group", "billing", ...cli]);
    expect(lag.stderr).toBe("");
    expect(lag.status).toBe(0);
    expect(lag.stdout.trimEnd().split("\n")).toEqual([
      expect.stringMatching(/^PARTITION +END +COMMITTED +LAG$/),
      expect.stringMatching(/^ +0 +3 +2 +1$/),
      expect.stringMatching(/^ +1 +1 +1 +0$/),
      'total lag of group "billing" on "events": 1',
    ]);
    const fresh = JSON.parse(later(["log", "lag", "events", "--group", "new", "--json", ...cli]).stdout);
    expect(fresh).toEqual({
      topic: "events",
      group: "new",
      partitions: [
        { partition: 0, endOffset: 3, committedOffset: 0, lag: 3 },
        { partition: 1, endOffset: 1, committedOffset: 0, lag: 1 },
      ],
      total: 4,
    });
    expect(later(["log", "lag", "events", ...cli]).status).toBe(2); // --group is required
  });

  it("an unknown topic exits 1 naming the namespace's log topics", async () => {
    const { cli } = await seeded();
    for (const args of [
      ["tail", "nope"],
      ["groups", "nope"],
      ["lag", "nope", "--group", "g"],
    ]) {
      const r = later(["log", ...args, ...cli]);
      expect(r.status).toBe(1);
      expect(r.stdout).toBe("");
      expect(r.stderr.trim()).toBe('later: no log topic "nope" in namespace "test" (its log topics: audit, events)');
    }
    const empty = later(["log", "tail", "nope", ...cli, "--namespace", "empty"]);
    expect(empty.stderr.trim()).toBe('later: no log topic "nope" in namespace "empty" (it has none)');
  });
});
