/**
 * `later jobs show` prints a stage history entry's note (docs/semantics.md
 * J1) beside it, and `--json` carries it as `note`: a put-back at shutdown
 * (J9) and a PermanentJobError (J3), written through the seam's release and
 * finish statements; a plain failure shows none. Run as a child process, on
 * SQLite and on PostgreSQL (skipped, with the setup's notice, when there is
 * none).
 */
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { newJobId } from "@later/runtime";
import type { Backend, JobRecord } from "@later/runtime/internal";
import { postgres } from "@later/runtime/postgres";
import { sqlite } from "@later/runtime/sqlite";
import { createPostgresSchema, postgresUrl, type PostgresSchema } from "../support/postgres.js";
import { later, SEED_TIME, tempDir } from "./later-cli.js";

interface Seeded {
  /** Put back at shutdown. */
  shutdown: string;
  /** Failed by a PermanentJobError. */
  permanent: string;
  /** Failed with its retries spent: no note. */
  plain: string;
}

/** Three jobs enqueued at SEED_TIME, claimed at + 10 and ended at + 20: one released at shutdown, one failed for good, one failed plainly. */
async function seed(backend: Backend): Promise<Seeded> {
  await backend.open();
  try {
    const now = SEED_TIME;
    const [shutdown, permanent, plain] = [newJobId(now), newJobId(now + 1), newJobId(now + 2)];
    const jobs = [shutdown, permanent, plain].map((id) => ({ id, jobType: "mail", payload: "{}", runAt: now, retryPolicy: null }));
    await backend.jobs.insertMany({ now, jobs });
    const claimed = await backend.jobs.claimReady({ owner: "seed", limit: 3, now: now + 10, leaseExpiresAt: now + 60_000, jobTypes: ["mail"] });
    expect(claimed.jobs).toHaveLength(3);
    await backend.jobs.releaseMany({ claims: [{ id: shutdown, attempt: 1 }], now: now + 20, reason: "shutdown" });
    await backend.jobs.finishMany({
      now: now + 20,
      retentionMs: 3_600_000,
      finishes: [
        { id: permanent, attempt: 1, outcome: { kind: "fail", error: "no such mailbox", permanent: true } },
        { id: plain, attempt: 1, outcome: { kind: "fail", error: "smtp down" } },
      ],
    });
    return { shutdown, permanent, plain };
  } finally {
    await backend.close();
  }
}

/** The `stage history` block of `later jobs show`. */
function history(stdout: string): string[] {
  const lines = stdout.split("\n");
  return lines.slice(lines.indexOf("stage history") + 1).filter((l) => l !== "");
}

function checks(setup: () => Promise<{ seeded: Seeded; args: string[] }>) {
  it("show prints the note beside its change; --json carries it as note, absent on plain changes", async () => {
    const { seeded, args } = await setup();
    const at = (ms: number) => new Date(SEED_TIME + ms).toISOString();

    const back = later(["jobs", "show", seeded.shutdown, ...args]);
    expect(back.status).toBe(0);
    expect(back.stdout).toMatch(/^stage +enqueued$/m);
    expect(history(back.stdout)).toEqual([`  ${at(0)}  enqueued`, `  ${at(10)}  running   +10ms`, `  ${at(20)}  enqueued  +10ms  (put back at shutdown)`]);

    const failed = later(["jobs", "show", seeded.permanent, ...args]);
    expect(history(failed.stdout)).toEqual([
      `  ${at(0)}  enqueued`,
      `  ${at(10)}  running   +10ms`,
      `  ${at(20)}  failed    +10ms  (permanent: PermanentJobError)`,
    ]);

    const plain = later(["jobs", "show", seeded.plain, ...args]);
    expect(history(plain.stdout)).toEqual([`  ${at(0)}  enqueued`, `  ${at(10)}  running   +10ms`, `  ${at(20)}  failed    +10ms`]);

    const json = (id: string) => (JSON.parse(later(["jobs", "show", id, "--json", ...args]).stdout) as JobRecord).stages;
    expect(json(seeded.shutdown)).toEqual([
      { stage: "enqueued", at: SEED_TIME },
      { stage: "running", at: SEED_TIME + 10 },
      { stage: "enqueued", at: SEED_TIME + 20, note: "shutdown" },
    ]);
    expect(json(seeded.permanent).at(-1)).toEqual({ stage: "failed", at: SEED_TIME + 20, note: "permanent" });
    expect(json(seeded.plain).at(-1)).toEqual({ stage: "failed", at: SEED_TIME + 20 });
  });
}

describe("later jobs show: stage notes (sqlite)", () => {
  const dir = tempDir();
  checks(async () => {
    const file = join(dir, "notes.db");
    const args = ["--database", `sqlite:${file}`];
    expect(later(["migrate", "up", ...args]).status).toBe(0);
    return { seeded: await seed(sqlite({ file })), args };
  });
});

describe.skipIf(postgresUrl() === null)("later jobs show: stage notes (postgres)", () => {
  const schemas: PostgresSchema[] = [];
  afterAll(async () => {
    await Promise.all(schemas.splice(0).map((s) => s.dispose()));
  });
  checks(async () => {
    const db = await createPostgresSchema();
    schemas.push(db);
    const args = ["--database", db.url, "--schema", db.schema];
    expect(later(["migrate", "up", ...args]).status).toBe(0);
    return { seeded: await seed(postgres({ connectionString: db.url, schema: db.schema })), args };
  });
});
