/** `later jobs retry|delete` (X7, X12) on a real SQLite file holding a job in every stage, run as a child process (stdin is not a terminal). */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { sqlite } from "@later/runtime/sqlite";
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
    expect(refused.stderr).toBe(`later: cannot retry job ${seeded.running}: it is running, and only failed jobs can be retried; nothing was changed\n`);
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
