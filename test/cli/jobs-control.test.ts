/**
 * `later jobs retry|delete` (X7, X12) run as a child process (stdin is not a
 * terminal): on a real SQLite file holding a job in every stage, and on a
 * PostgreSQL schema (skipped, with the setup's notice, when there is none).
 */
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { newJobId } from "@later/runtime";
import { postgres } from "@later/runtime/postgres";
import { sqlite } from "@later/runtime/sqlite";
import { createPostgresSchema, postgresUrl, type PostgresSchema } from "../support/postgres.js";
import { later, seedDatabase, tempDir, type SeededJobs } from "./later-cli.js";

describe("later jobs retry|delete (sqlite)", () => {
  const dir = tempDir();
  let file: string;
  let db: string[];
  let seeded: SeededJobs;
  let n = 0;

  /** A freshly seeded database per test: each one changes it. */
  async function fresh(): Promise<void> {
    file = join(dir, `control-${n++}.db`);
    db = ["--database", `sqlite:${file}`];
    seeded = await seedDatabase(file);
  }

  async function stageOf(id: string, namespace = "default"): Promise<string | null> {
    const backend = sqlite({ file, namespace });
    await backend.open();
    try {
      return (await backend.inspect.jobGet({ id }))?.stage ?? null;
    } finally {
      await backend.close();
    }
  }

  it("retry ID puts a failed job back to enqueued; delete ID removes a finished one", async () => {
    await fresh();
    const retried = later(["jobs", "retry", seeded.failed, ...db]);
    expect(retried).toMatchObject({ status: 0, stdout: `retried job ${seeded.failed}: enqueued, ready now\n`, stderr: "" });
    expect(await stageOf(seeded.failed)).toBe("enqueued");
    const deleted = later(["jobs", "delete", seeded.success, ...db, "--json"]);
    expect(deleted.status).toBe(0);
    expect(JSON.parse(deleted.stdout)).toEqual({ action: "delete", id: seeded.success });
    expect(await stageOf(seeded.success)).toBeNull();
  });

  it("a job in another stage, or an unknown id, exits 1 with the reason and changes nothing; bad usage exits 2", async () => {
    await fresh();
    const refused = later(["jobs", "retry", seeded.running, ...db]);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toBe(
      `later: cannot retry job ${seeded.running}: it is running, and only failed or cancelled jobs can be retried; nothing was changed\n`,
    );
    expect(later(["jobs", "delete", seeded.enqueued, ...db]).status).toBe(1);
    expect(later(["jobs", "delete", "01jh2k3m4n5p6q7r8s9t0v1w2x", ...db]).stderr).toMatch(/^later: job 01jh2k3m4n5p6q7r8s9t0v1w2x not found in this namespace/);
    // Another namespace's job is not found from "default".
    expect(later(["jobs", "delete", seeded.otherNamespace, ...db]).status).toBe(1);
    expect(await stageOf(seeded.running)).toBe("running");
    expect(await stageOf(seeded.enqueued)).toBe("enqueued");
    expect(later(["jobs", "retry", seeded.failed, "--stage", "failed", ...db]).status).toBe(2);
    expect(later(["jobs", "retry", ...db]).status).toBe(2);
    expect(later(["jobs", "retry", "not-an-id", ...db]).status).toBe(2);
    expect(later(["jobs", "retry", "--stage", "success", ...db]).status).toBe(2);
    expect(await stageOf(seeded.failed)).toBe("failed");
  });

  it("the filter form prints how many match and, without a terminal, needs --yes (exit 2 without, nothing changed)", async () => {
    await fresh();
    const asked = later(["jobs", "delete", "--stage", "success", ...db]);
    expect(asked.status).toBe(2);
    expect(asked.stdout).toBe(`delete matches 1 job in stage success in namespace "default"\n`);
    expect(asked.stderr).toMatch(/^error: later jobs delete would change 1 job in stage success in namespace "default"; pass --yes to go ahead/);
    expect(await stageOf(seeded.success)).toBe("success");

    const done = later(["jobs", "delete", "--stage", "success", "--yes", ...db]);
    expect(done).toMatchObject({ status: 0, stdout: `delete matches 1 job in stage success in namespace "default"\ndeleted 1 job\n` });
    expect(await stageOf(seeded.success)).toBeNull();

    const retried = later(["jobs", "retry", "--stage", "failed", "--yes", "--json", ...db]);
    expect(retried.status).toBe(0);
    expect(JSON.parse(retried.stdout)).toEqual({ action: "retry", matched: 1, count: 1 });
    expect(await stageOf(seeded.failed)).toBe("enqueued");
    // Nothing left to match: no --yes needed, exit 0.
    expect(later(["jobs", "retry", "--stage", "failed", ...db])).toMatchObject({
      status: 0,
      stdout: `no jobs to retry: 0 jobs in stage failed in namespace "default"\n`,
    });
    // --namespace (or LATER_NAMESPACE) scopes it: the other namespace's jobs were untouched.
    const other = later(["jobs", "delete", "--type", "nothing-of-this-type", "--yes"], {
      env: { LATER_DATABASE_URL: `sqlite:${file}`, LATER_NAMESPACE: "other" },
    });
    expect(other).toMatchObject({ status: 0, stdout: `no jobs to delete: 0 jobs of type nothing-of-this-type in namespace "other"\n` });
    expect(await stageOf(seeded.otherNamespace, "other")).not.toBeNull();
  });
});

describe.skipIf(postgresUrl() === null)("later jobs retry|delete (postgres)", () => {
  const schemas: PostgresSchema[] = [];
  afterEach(async () => {
    await Promise.all(schemas.splice(0).map((s) => s.dispose()));
  });

  /** A migrated schema holding two failed jobs and one success, written through the seam. */
  async function seeded() {
    const db = await createPostgresSchema();
    schemas.push(db);
    const args = ["--database", db.url, "--schema", db.schema];
    expect(later(["migrate", "up", ...args]).status).toBe(0);
    const backend = postgres({ connectionString: db.url, schema: db.schema });
    await backend.open();
    const now = Date.now();
    const ids = [newJobId(now), newJobId(now + 1), newJobId(now + 2)];
    await backend.jobs.insertMany({ now, jobs: ids.map((id) => ({ id, jobType: "mail", payload: "{}", runAt: now, retryPolicy: null })) });
    const { jobs } = await backend.jobs.claimReady({ owner: "seed", limit: 3, now, leaseExpiresAt: now + 60_000, jobTypes: ["mail"] });
    const outcome = (id: string) => (id === ids[2] ? { kind: "success" as const } : { kind: "fail" as const, error: "down" });
    await backend.jobs.finishMany({ now, retentionMs: 3_600_000, finishes: jobs.map((j) => ({ id: j.id, attempt: j.attempt, outcome: outcome(j.id) })) });
    const stageOf = async (id: string) => (await backend.inspect.jobGet({ id }))?.stage ?? null;
    return { args, ids, backend, stageOf };
  }

  it("by id, refused, and the filter form with --yes, through the same statements", async () => {
    const { args, ids, backend, stageOf } = await seeded();
    try {
      expect(later(["jobs", "retry", ids[0]!, ...args])).toMatchObject({ status: 0, stdout: `retried job ${ids[0]}: enqueued, ready now\n` });
      expect(await stageOf(ids[0]!)).toBe("enqueued");
      expect(later(["jobs", "delete", ids[0]!, ...args]).stderr).toMatch(
        /^later: cannot delete job \S+: it is enqueued, and only success, failed or cancelled jobs can be deleted/,
      );
      expect(later(["jobs", "retry", "--type", "mail", ...args]).status).toBe(2);
      expect(await stageOf(ids[1]!)).toBe("failed");
      const retried = later(["jobs", "retry", "--type", "mail", "--yes", "--json", ...args]);
      expect(JSON.parse(retried.stdout)).toEqual({ action: "retry", matched: 1, count: 1 });
      const deleted = later(["jobs", "delete", "--stage", "success", "--yes", ...args]);
      expect(deleted).toMatchObject({ status: 0, stdout: `delete matches 1 job in stage success in namespace "default"\ndeleted 1 job\n` });
      expect(await stageOf(ids[2]!)).toBeNull();
      expect((await backend.inspect.stageCounts()).counts).toMatchObject({ enqueued: 2, failed: 0, success: 0 });
    } finally {
      await backend.close();
    }
  });
});
