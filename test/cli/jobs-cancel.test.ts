/**
 * `later jobs cancel` (X3) run as a child process (stdin is not a terminal):
 * by id with a reason, a finished job (exit 1, nothing changed), an unknown
 * id, bad usage, and the filter form with its count and `--yes`; on a real
 * SQLite file holding a job in every stage, and on a PostgreSQL schema
 * (skipped, with the setup's notice, when there is none).
 */
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { newJobId } from "@later/runtime";
import { postgres } from "@later/runtime/postgres";
import { sqlite } from "@later/runtime/sqlite";
import { createPostgresSchema, postgresUrl, type PostgresSchema } from "../support/postgres.js";
import { later, seedDatabase, tempDir } from "./later-cli.js";

describe("later jobs cancel (sqlite)", () => {
  const dir = tempDir();

  it("cancel ID ends an unfinished job cancelled with its reason (its waiting continuation too); a finished one exits 1; the filter form asks", async () => {
    const file = join(dir, "cancel.db");
    const db = ["--database", `sqlite:${file}`];
    const seeded = await seedDatabase(file);
    const read = async (id: string) => {
      const backend = sqlite({ file });
      await backend.open();
      try {
        return await backend.inspect.jobGet({ id });
      } finally {
        await backend.close();
      }
    };

    // The enqueued job is the waiting one's parent: both end cancelled.
    const cancelled = later(["jobs", "cancel", seeded.enqueued, "--reason", "not wanted", ...db]);
    expect(cancelled).toMatchObject({ status: 0, stdout: `cancelled job ${seeded.enqueued}\n`, stderr: "" });
    expect((await read(seeded.enqueued))?.stages.at(-1)).toMatchObject({ stage: "cancelled", note: "not wanted" });
    expect((await read(seeded.waiting))?.stage).toBe("cancelled");
    expect(later(["jobs", "show", seeded.enqueued, ...db]).stdout).toContain("cancelled");

    const finished = later(["jobs", "cancel", seeded.success, "--json", ...db]);
    expect(finished.status).toBe(1);
    expect(JSON.parse(finished.stdout)).toEqual({ action: "cancel", id: seeded.success, cancelled: false });
    expect(later(["jobs", "cancel", seeded.failed, ...db])).toMatchObject({
      status: 1,
      stderr: `job ${seeded.failed} has finished already (success, failed or cancelled): nothing changed\n`,
    });
    expect(later(["jobs", "cancel", "01jh2k3m4n5p6q7r8s9t0v1w2x", ...db]).stderr).toMatch(/^later: job 01jh2k3m4n5p6q7r8s9t0v1w2x not found in this namespace/);
    expect(later(["jobs", "cancel", "not-an-id", ...db]).status).toBe(2);
    expect(later(["jobs", "cancel", ...db]).status).toBe(2);
    expect(later(["jobs", "cancel", "--stage", "success", ...db]).status).toBe(2);
    expect((await read(seeded.success))?.stage).toBe("success");

    // Filter form: delayed, running and requeued are left; without --yes it only counts.
    const asked = later(["jobs", "cancel", "--type", "sendEmail", ...db]);
    expect(asked.status).toBe(2);
    expect(asked.stdout).toBe(`cancel matches 1 job of type sendEmail in namespace "default"\n`);
    expect((await read(seeded.delayed))?.stage).toBe("delayed");
    const all = later(["jobs", "cancel", "--stage", "requeued", "--yes", "--json", "--reason", "bulk", ...db]);
    expect(all.status).toBe(0);
    expect(JSON.parse(all.stdout)).toEqual({ action: "cancel", matched: 1, count: 1 });
    expect((await read(seeded.requeued))?.stages.at(-1)).toMatchObject({ stage: "cancelled", note: "bulk" });
    expect(later(["jobs", "cancel", "--type", "sendEmail", "--yes", ...db])).toMatchObject({
      status: 0,
      stdout: `cancel matches 1 job of type sendEmail in namespace "default"\ncancelled 1 job\n`,
    });
    expect((await read(seeded.delayed))?.stage).toBe("cancelled");
    // A cancelled job is retryable.
    expect(later(["jobs", "retry", seeded.delayed, ...db]).status).toBe(0);
    expect((await read(seeded.delayed))?.stage).toBe("enqueued");
  });
});

describe.skipIf(postgresUrl() === null)("later jobs cancel (postgres)", () => {
  const schemas: PostgresSchema[] = [];
  afterEach(async () => {
    await Promise.all(schemas.splice(0).map((s) => s.dispose()));
  });

  it("by id, a finished one, and the filter form with --yes, through the same statements", async () => {
    const db = await createPostgresSchema();
    schemas.push(db);
    const args = ["--database", db.url, "--schema", db.schema];
    expect(later(["migrate", "up", ...args]).status).toBe(0);
    const backend = postgres({ connectionString: db.url, schema: db.schema });
    await backend.open();
    try {
      const now = Date.now();
      const ids = [newJobId(now), newJobId(now + 1), newJobId(now + 2)];
      await backend.jobs.insertMany({ now, jobs: ids.map((id) => ({ id, jobType: "mail", payload: "{}", runAt: now + 3_600_000, retryPolicy: null })) });
      const stageOf = async (id: string) => (await backend.inspect.jobGet({ id }))?.stage ?? null;
      expect(later(["jobs", "cancel", ids[0]!, "--reason", "r", ...args])).toMatchObject({ status: 0, stdout: `cancelled job ${ids[0]}\n` });
      expect(await stageOf(ids[0]!)).toBe("cancelled");
      expect(later(["jobs", "cancel", ids[0]!, ...args]).status).toBe(1);
      expect(later(["jobs", "cancel", "--type", "mail", ...args]).status).toBe(2);
      const bulk = later(["jobs", "cancel", "--type", "mail", "--stage", "delayed", "--yes", "--json", ...args]);
      expect(JSON.parse(bulk.stdout)).toEqual({ action: "cancel", matched: 2, count: 2 });
      expect((await backend.inspect.stageCounts()).counts).toMatchObject({ delayed: 0, cancelled: 3 });
    } finally {
      await backend.close();
    }
  });
});
