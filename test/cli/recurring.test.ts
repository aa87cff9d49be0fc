/** `later recurring list` and `delete` on real databases holding schedules registered through the publisher, run as a child process. */
import { existsSync } from "node:fs";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JobPublisher, RECURRING_SEQUENTIAL_TOPIC, RetryPolicy } from "@later/runtime";
import type { Backend, RecurringScheduleListed } from "@later/runtime/internal";
import { postgres } from "@later/runtime/postgres";
import { sqlite } from "@later/runtime/sqlite";
import { ManualClock } from "@later/runtime/testing";
import { createPostgresSchema, postgresUrl, type PostgresSchema } from "../support/postgres.js";
import { hasStackTrace, later, tempDir } from "./later-cli.js";

/** 2025-01-02T03:04:05Z: the time the schedules are registered at. */
const NOW = Date.UTC(2025, 0, 2, 3, 4, 5);

interface Seeded {
  plain: string;
  sequential: string;
}

/** Registers two schedules in namespace "default" (one plain in Europe/Paris, one sequential in UTC) and one in "other". */
async function seedSchedules(backend: () => Backend, other: Backend): Promise<Seeded> {
  const register = async (b: Backend, scheduleId: string, payload: unknown, cron: string, options: { timeZone?: string; sequential?: boolean } = {}) => {
    await b.open();
    await b.migrations.up();
    const publisher = new JobPublisher({
      backend: b,
      clock: new ManualClock(NOW),
      defaultRetryPolicy: RetryPolicy.noRetries(),
      retentionMs: 86_400_000,
      encoders: new Map([
        ["sendReport", JSON.stringify],
        ["cleanUp", JSON.stringify],
      ]),
      topics: new Map([[RECURRING_SEQUENTIAL_TOPIC, 4]]),
      onCommitted: () => undefined,
    });
    try {
      return await publisher.enqueueRecurring(options.sequential ? "cleanUp" : "sendReport", scheduleId, payload, cron, options);
    } finally {
      await b.close();
    }
  };
  const plain = await register(backend(), "daily-report", { to: "ops@example.com" }, "0 0 6 * * *", { timeZone: "Europe/Paris" });
  const sequential = await register(backend(), "cleanup", { keep: 7 }, "0 */15 * * * *", { sequential: true });
  await register(other, "elsewhere", {}, "0 0 0 * * *");
  return { plain: plain!, sequential: sequential! };
}

function expectTable(stdout: string, seeded: Seeded): void {
  const lines = stdout.split("\n").filter((l) => l !== "");
  expect(lines).toHaveLength(3);
  expect(lines[0]).toMatch(/^ID +TYPE +CRON +TIME ZONE +MODE +ENQUEUED +NEXT$/);
  // Ordered by id; every column starts where its header does.
  const at = (title: string) => lines[0]!.indexOf(title);
  const cell = (line: string, title: string) => line.slice(at(title)).split("  ")[0]!.trim();
  const [cleanup, report] = [lines[1]!, lines[2]!];
  expect([cell(cleanup, "ID"), cell(cleanup, "TYPE"), cell(cleanup, "CRON"), cell(cleanup, "TIME ZONE"), cell(cleanup, "MODE")]).toEqual([
    "cleanup",
    "cleanUp",
    "0 */15 * * * *",
    "UTC",
    expect.stringMatching(/^sequential\/[0-3]$/),
  ]);
  // Sequential: the first occurrence (03:15) is not enqueued yet, so it is the next one; none is enqueued.
  expect(cell(cleanup, "ENQUEUED")).toBe("-");
  expect(cell(cleanup, "NEXT")).toBe("2025-01-02T03:15:00Z");
  expect([cell(report, "ID"), cell(report, "TYPE"), cell(report, "CRON"), cell(report, "TIME ZONE"), cell(report, "MODE")]).toEqual([
    "daily-report",
    "sendReport",
    "0 0 6 * * *",
    "Europe/Paris",
    "plain",
  ]);
  // Plain: the first occurrence (06:00 Paris, 05:00Z on the 2nd) is enqueued, shown with its job; the
  // next one not yet enqueued is on the 3rd. (Before, only "NEXT RUN 3rd" showed: the 2nd's run was hidden.)
  expect(cell(report, "ENQUEUED")).toBe(`2025-01-02T05:00:00Z ${seeded.plain}`);
  expect(cell(report, "NEXT")).toBe("2025-01-03T05:00:00Z");
  expect(stdout).not.toContain("elsewhere");
}

describe("later recurring (sqlite)", () => {
  const dir = tempDir();
  const file = join(dir, "jobs.db");
  const db = ["--database", `sqlite:${file}`];
  let seeded: Seeded;
  beforeAll(async () => {
    seeded = await seedSchedules(() => sqlite({ file, namespace: "default" }), sqlite({ file, namespace: "other" }));
  });

  it("list prints every schedule of the namespace with its mode, the occurrence already enqueued and the next one", () => {
    const result = later(["recurring", "list", ...db]);
    expect(result.status).toBe(0);
    expect(result.stderr).toBe("");
    expectTable(result.stdout, seeded);
  });

  it("list --json prints the stored schedules with decoded payloads", () => {
    const result = later(["recurring", "list", "--json", ...db]);
    expect(result.status).toBe(0);
    const schedules = JSON.parse(result.stdout) as (Omit<RecurringScheduleListed, "payload"> & { payload: unknown })[];
    expect(schedules.map((s) => s.id)).toEqual(["cleanup", "daily-report"]);
    expect(schedules[0]).toMatchObject({
      jobType: "cleanUp",
      payload: { keep: 7 },
      sequential: true,
      nextRunAt: Date.UTC(2025, 0, 2, 3, 15),
      nextJobId: seeded.sequential,
      lastJobId: null,
      lastRunAt: null,
    });
    expect(schedules[1]).toMatchObject({
      jobType: "sendReport",
      payload: { to: "ops@example.com" },
      timeZone: "Europe/Paris",
      sequential: false,
      partition: null,
      nextRunAt: Date.UTC(2025, 0, 3, 5),
      lastJobId: seeded.plain,
      lastRunAt: Date.UTC(2025, 0, 2, 5),
      createdAt: NOW,
    });
  });

  it("--namespace reads another namespace; an empty one says so", () => {
    expect(later(["recurring", "list", "--namespace", "other", ...db]).stdout).toMatch(/^elsewhere +sendReport +0 0 0 \* \* \* +UTC +plain /m);
    const none = later(["recurring", "list", "--namespace", "nobody", ...db]);
    expect(none.status).toBe(0);
    expect(none.stdout).toBe('no recurring schedules in namespace "nobody"\n');
    expect(JSON.parse(later(["recurring", "list", "--json", "--namespace", "nobody", ...db]).stdout)).toEqual([]);
  });

  it("a missing file is an error and is not created; an unknown subcommand is a usage error", () => {
    const missing = join(dir, "missing.db");
    const result = later(["recurring", "list", "--database", `sqlite:${missing}`]);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/^later: no SQLite database at .*missing\.db: /);
    expect(hasStackTrace(result.stderr)).toBe(false);
    expect(existsSync(missing)).toBe(false);
    expect(later(["recurring", "delete", ...db]).status).toBe(2);
    expect(later(["--help"]).stdout).toMatch(/^ {2}recurring /m);
  });

  it("delete removes one schedule of the namespace; an unknown id exits 1 saying so", () => {
    expectDelete(db);
  });
});

/** `later recurring delete elsewhere`: unknown in "default" (exit 1, nothing changed), deleted from "other". */
function expectDelete(db: readonly string[]): void {
  const unknown = later(["recurring", "delete", "elsewhere", ...db]);
  expect(unknown.status).toBe(1);
  expect(unknown.stdout).toBe("");
  expect(unknown.stderr).toBe('later: no recurring schedule "elsewhere" in namespace "default" (later recurring list shows them)\n');
  const other = [...db, "--namespace", "other"];
  expect(later(["recurring", "list", ...other]).stdout).toMatch(/^elsewhere /m);
  const deleted = later(["recurring", "delete", "elsewhere", ...other]);
  expect(deleted.stderr).toBe("");
  expect(deleted.status).toBe(0);
  expect(deleted.stdout).toBe('deleted recurring schedule "elsewhere" (occurrences already enqueued stay)\n');
  expect(later(["recurring", "list", ...other]).stdout).toBe('no recurring schedules in namespace "other"\n');
  expect(later(["recurring", "delete", "elsewhere", ...other]).status).toBe(1);
}

describe.skipIf(postgresUrl() === null)("later recurring (postgres)", () => {
  let schema: PostgresSchema;
  let seeded: Seeded;
  beforeAll(async () => {
    schema = await createPostgresSchema();
    const make = (namespace: string) => postgres({ connectionString: schema.url, schema: schema.schema, namespace, listen: false, maxConnections: 2 });
    seeded = await seedSchedules(() => make("default"), make("other"));
  });
  afterAll(async () => schema?.dispose());

  it("list prints the same table as on SQLite", () => {
    const result = later(["recurring", "list", "--database", schema.url, "--schema", schema.schema]);
    expect(result.status).toBe(0);
    expect(result.stderr).toBe("");
    expectTable(result.stdout, seeded);
  });

  it("delete removes one schedule of the namespace; an unknown id exits 1 saying so", () => {
    expectDelete(["--database", schema.url, "--schema", schema.schema]);
  });
});
