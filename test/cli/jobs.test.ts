/** `later jobs list|show` on a real SQLite file holding a job in every stage, run as a child process. */
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import Database from "better-sqlite3";
import fc from "fast-check";
import { beforeAll, describe, expect, it } from "vitest";
import { JOB_STAGES, newJobId } from "@later/runtime";
import { sqlite } from "@later/runtime/sqlite";
import type { JobRecord } from "@later/runtime/internal";
import { hasStackTrace, later, seedDatabase, tempDir, type SeededJobs } from "./later-cli.js";

describe("later jobs (sqlite)", () => {
  const dir = tempDir();
  const file = join(dir, "jobs.db");
  const db = ["--database", `sqlite:${file}`];
  let seeded: SeededJobs;
  beforeAll(async () => {
    seeded = await seedDatabase(file);
  });

  /** The id column of a table printed by `jobs list`. */
  const idsOf = (stdout: string) =>
    stdout
      .split("\n")
      .slice(1)
      .filter((l) => /^[0-9a-z]{26} /.test(l))
      .map((l) => l.slice(0, 26));

  it("list prints an aligned table of every job, newest first, and the stage counts", () => {
    const result = later(["jobs", "list", ...db]);
    expect(result.status).toBe(0);
    expect(result.stderr).toBe("");
    const lines = result.stdout.split("\n");
    expect(lines[0]).toMatch(/^ID {26}TYPE +STAGE +ATTEMPT {2}RUN AT {16}UPDATED$/);
    expect(idsOf(result.stdout)).toEqual([...seeded.all].reverse());
    // Aligned: every column starts where its header does.
    const stageAt = lines[0]!.indexOf("STAGE");
    const runAtAt = lines[0]!.indexOf("RUN AT");
    for (const line of lines.slice(1, 1 + seeded.all.length)) {
      expect(JOB_STAGES).toContain(line.slice(stageAt).split(" ")[0]);
      expect(line.slice(runAtAt)).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ {2}\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/);
    }
    const row = (id: string) => lines.find((l) => l.startsWith(id))!;
    expect(row(seeded.failed)).toMatch(/ sendEmail +failed +1 {2}2025-01-02T03:04:05Z/);
    expect(row(seeded.delayed)).toMatch(/ sendEmail +delayed +0 {2}2025-01-02T04:04:05Z/);
    expect(row(seeded.waiting)).toMatch(/ createAccount +waiting +0 /);
    expect(result.stdout).toContain('namespace "default" holds 7 jobs: enqueued 1, delayed 1, waiting 1, running 1, requeued 1, success 1, failed 1');
    expect(result.stdout).not.toContain(seeded.otherNamespace);
  });

  it("--stage, --type and --limit filter; --namespace reads another namespace", () => {
    for (const stage of ["waiting", "running", "failed"] as const) {
      const result = later(["jobs", "list", "--stage", stage, ...db]);
      expect(result.status).toBe(0);
      expect(idsOf(result.stdout)).toEqual([seeded[stage]]);
    }
    const sendEmail = later(["jobs", "list", "--type", "sendEmail", ...db]);
    expect(idsOf(sendEmail.stdout)).toEqual([seeded.delayed, seeded.enqueued, seeded.failed]);
    const both = later(["jobs", "list", "--type", "sendEmail", "--stage", "failed", ...db]);
    expect(idsOf(both.stdout)).toEqual([seeded.failed]);

    const limited = later(["jobs", "list", "--limit", "2", ...db]);
    expect(idsOf(limited.stdout)).toEqual([seeded.waiting, seeded.delayed]);
    expect(limited.stdout).toContain("showing the newest 2; --limit N shows more");

    const other = later(["jobs", "list", "--namespace", "other", ...db]);
    expect(idsOf(other.stdout)).toEqual([seeded.otherNamespace]);

    const none = later(["jobs", "list", "--type", "noSuchType", ...db]);
    expect(none.status).toBe(0);
    expect(none.stdout).toMatch(/^no jobs of type noSuchType in namespace "default"$/m);
  });

  it("list in a namespace with no jobs names the namespaces that have some", () => {
    const result = later(["jobs", "list", "--namespace", "nobody", ...db]);
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('no jobs in namespace "nobody"');
    expect(result.stdout).toContain('namespace "nobody" holds no jobs; namespaces with jobs: "default" (7 jobs), "other" (1 job) (--namespace NS)');
  });

  it("list --json prints a JSON array of jobs with decoded payloads", () => {
    const result = later(["jobs", "list", "--json", "--stage", "failed", ...db]);
    expect(result.status).toBe(0);
    const jobs = JSON.parse(result.stdout) as (Omit<JobRecord, "payload"> & { payload: unknown })[];
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toMatchObject({
      id: seeded.failed,
      jobType: "sendEmail",
      stage: "failed",
      attempt: 1,
      payload: { address: "a@example.com", body: "hello" },
      lastError: "smtp: connection refused\nafter 3 tries",
    });
    expect(jobs[0]!.stages.map((s) => s.stage)).toEqual(["enqueued", "running", "failed"]);
    expect(JSON.parse(later(["jobs", "list", "--json", "--type", "none", ...db]).stdout)).toEqual([]);
  });

  it("show prints every field, the payload, the last error and the stage history with times", () => {
    const result = later(["jobs", "show", seeded.failed, ...db]);
    expect(result.status).toBe(0);
    const out = result.stdout;
    expect(out).toMatch(new RegExp(`^id +${seeded.failed}$`, "m"));
    expect(out).toMatch(/^type +sendEmail$/m);
    expect(out).toMatch(/^stage +failed$/m);
    expect(out).toMatch(/^attempt +1$/m);
    expect(out).toMatch(/^run at +2025-01-02T03:04:05Z$/m);
    expect(out).toMatch(/^parent +-$/m);
    expect(out).toMatch(/^lease +-$/m);
    expect(out).toMatch(/^created +2025-01-02T03:04:05Z$/m);
    expect(out).toMatch(/^expires +2025-01-03T03:04:05Z$/m);
    expect(out).toMatch(/^last error +smtp: connection refused\n +after 3 tries$/m);
    expect(out).toMatch(/^payload +\{\n +"address": "a@example.com",\n +"body": "hello"\n +\}$/m);
    expect(out).toMatch(
      /^stage history\n {2}2025-01-02T03:04:05\.\d{3}Z {2}enqueued\n {2}2025-01-02T03:04:05\.\d{3}Z {2}running {3}\+10ms\n {2}2025-01-02T03:04:05\.\d{3}Z {2}failed {4}\+10ms$/m,
    );

    expect(out).not.toMatch(/^progress/m); // none reported
    // What a handler's ctx.progress(value) stored (X8), printed as JSON.
    const sqlite = new Database(file);
    sqlite.prepare("UPDATE later_jobs SET progress = ? WHERE id = ?").run('{"done":3,"of":10}', seeded.running);
    sqlite.close();
    const running = later(["jobs", "show", seeded.running, ...db]).stdout;
    expect(running).toMatch(/^progress +\{\n +"done": 3,\n +"of": 10\n +\}$/m);
    expect(running).toMatch(/^lease +worker-1 until \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/m);
    expect(running).toMatch(/^expires +- \(not terminal yet\)$/m);
    const waiting = later(["jobs", "show", seeded.waiting, ...db]).stdout;
    expect(waiting).toMatch(new RegExp(`^parent +${seeded.enqueued}$`, "m"));
    // Ids are lowercase ULIDs; an id pasted in capitals is found too.
    expect(later(["jobs", "show", seeded.success.toUpperCase(), ...db]).stdout).toMatch(/^stage +success$/m);
  });

  it("show prints a success's result (X6) as JSON, cut past 2000 characters", () => {
    expect(later(["jobs", "show", seeded.success, ...db]).stdout).not.toMatch(/^result/m); // none stored
    const sqlite = new Database(file);
    sqlite.prepare("UPDATE later_jobs SET result = ? WHERE id = ?").run('{"messageId":"m-1"}', seeded.success);
    sqlite.close();
    expect(later(["jobs", "show", seeded.success, ...db]).stdout).toMatch(/^result +\{\n +"messageId": "m-1"\n +\}$/m);
    const big = JSON.stringify({ blob: "x".repeat(5_000) });
    const again = new Database(file);
    again.prepare("UPDATE later_jobs SET result = ? WHERE id = ?").run(big, seeded.success);
    again.close();
    const out = later(["jobs", "show", seeded.success, ...db]).stdout;
    expect(out).toMatch(/… \(truncated: 5011 bytes of JSON; --json prints it all\)/);
    expect(out).not.toContain("x".repeat(2_100));
    expect(JSON.parse(later(["jobs", "show", seeded.success, "--json", ...db]).stdout).result).toBe(big);
  });

  it("show --json prints the whole record", () => {
    const result = later(["jobs", "show", seeded.requeued, "--json", ...db]);
    expect(result.status).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ id: seeded.requeued, stage: "requeued", lastError: "disk full", payload: { path: "/img/1.png" } });
  });

  it("an unknown id exits 1 with one line; a malformed id is a usage error", () => {
    const unknown = "01jh2k3m4n5p6q7r8s9t0v1w2x";
    const result = later(["jobs", "show", unknown, ...db]);
    expect(result.status).toBe(1);
    expect(result.stdout).toBe("");
    expect(result.stderr).toMatch(new RegExp(`^later: job ${unknown} not found in namespace "default"[^\\n]*\\n$`));
    // Another namespace's job is not found from "default".
    expect(later(["jobs", "show", seeded.otherNamespace, ...db]).status).toBe(1);

    const malformed = later(["jobs", "show", "not-an-id", ...db]);
    expect(malformed.status).toBe(2);
    expect(malformed.stderr).toMatch(/^error: command-argument value 'not-an-id' is invalid for argument 'id'\. not a job id/);
  });

  it("hostile job ids (quotes, SQL, unicode, 10,000 characters) get exit 1 or 2 with one line and no stack trace, and change nothing", () => {
    const dump = () => {
      const conn = new Database(file, { readonly: true });
      try {
        return conn.serialize().toString("base64");
      } finally {
        conn.close();
      }
    };
    const before = dump();
    const ids = fc.oneof(
      fc.string({ unit: "binary", maxLength: 40 }),
      fc.constantFrom("'", "'; DROP TABLE later_jobs; --", "01JH2K3M4N5P6Q7R8S9T0V1W2X' OR '1'='1", "名前🚀", "\ud800", "-", "--help", "a".repeat(10_000)),
    );
    fc.assert(
      fc.property(ids, (id) => {
        // An argument cannot hold NUL (the OS would cut it); every other string is passed as given, after "--".
        fc.pre(!id.includes("\0"));
        const result = later(["jobs", "show", ...db, "--", id]);
        expect([1, 2]).toContain(result.status);
        expect(result.stdout).toBe("");
        expect(hasStackTrace(result.stderr)).toBe(false);
        expect(result.stderr.trim().split("\n").length).toBeLessThanOrEqual(2);
      }),
      { numRuns: 12, seed: 20261203 },
    );
    expect(dump()).toBe(before);
  });

  it("a bad --stage is a usage error that lists the stages", () => {
    const result = later(["jobs", "list", "--stage", "done", ...db]);
    expect(result.status).toBe(2);
    expect(result.stdout).toBe("");
    expect(result.stderr).toContain(
      "argument 'done' is invalid. Allowed choices are enqueued, delayed, waiting, running, requeued, success, failed, cancelled.",
    );
  });

  it("a missing file is an error and is not created", () => {
    const missing = join(dir, "missing.db");
    for (const args of [
      ["jobs", "list"],
      ["jobs", "show", seeded.failed],
    ]) {
      const result = later([...args, "--database", `sqlite:${missing}`]);
      expect(result.status).toBe(1);
      expect(result.stderr).toMatch(/^later: no SQLite database at .*missing\.db: .*later migrate up --database sqlite:.*missing\.db`\n$/);
    }
    expect(existsSync(missing)).toBe(false);
  });

  it("a database whose schema is behind gives the SchemaVersionError message", () => {
    const behind = join(dir, "behind.db");
    writeFileSync(behind, "");
    for (const args of [
      ["jobs", "list"],
      ["jobs", "show", seeded.failed],
    ]) {
      const result = later([...args, "--database", `sqlite:${behind}`]);
      expect(result.status).toBe(1);
      expect(result.stdout).toBe("");
      const [, needs] = /this release needs (\d+)\)/.exec(result.stderr) ?? [];
      expect(Number(needs)).toBeGreaterThan(0);
      expect(result.stderr).toBe(
        `later: the later schema in this database is behind (version 0, this release needs ${needs}): run \`later migrate up --database sqlite:${behind}\`, or start with autoMigrate: true\n`,
      );
      expect(hasStackTrace(result.stderr)).toBe(false);
    }
  });

  it("an unexpected error prints its message on one line; the stack trace only with LATER_DEBUG=1", () => {
    const broken = join(dir, "broken.db");
    expect(later(["migrate", "up", "--database", `sqlite:${broken}`]).status).toBe(0);
    const raw = new Database(broken);
    raw.exec("DROP TABLE later_jobs"); // the schema version says 1, the table is gone
    raw.close();
    const args = ["jobs", "list", "--database", `sqlite:${broken}`];
    const quiet = later(args);
    expect(quiet.status).toBe(1);
    expect(quiet.stderr).toBe("later: no such table: later_jobs (unexpected error; LATER_DEBUG=1 prints its stack trace)\n");
    const debug = later(args, { env: { LATER_DEBUG: "1" } });
    expect(debug.status).toBe(1);
    expect(debug.stderr).toMatch(/^later: no such table: later_jobs\n/);
    expect(hasStackTrace(debug.stderr)).toBe(true);
  });
});

describe("later jobs list: job types with no live handler", () => {
  it("warns of each ready type no live server publishes, with its count", async () => {
    const file = join(tempDir(), "unhandled.db");
    const backend = sqlite({ file });
    try {
      await backend.open();
      await backend.migrations.up();
      const now = Date.now();
      const job = (jobType: string, i: number) => ({ id: newJobId(now + i), jobType, payload: "{}", runAt: now - 1_000, retryPolicy: null });
      await backend.jobs.insertMany({ jobs: [job("resize", 0), job("deletePhoto", 1), job("deletePhoto", 2), job("deletePhoto", 3), job("archive", 4)], now });
      // A live worker (its heartbeat expires in an hour) that handles resize and archive, as a newer web process enqueued deletePhoto.
      await backend.activity.serverHeartbeat({
        instanceId: "worker-1",
        host: "box",
        pid: 1,
        workers: 4,
        busy: 0,
        now,
        expiresAt: now + 3_600_000,
        jobTypes: ["resize", "archive"],
      });
    } finally {
      await backend.close();
    }
    const result = later(["jobs", "list", "--database", `sqlite:${file}`]);
    expect(result.status).toBe(0);
    const warnings = result.stdout.split("\n").filter((l) => l.startsWith("warning:"));
    expect(warnings).toEqual(["warning: 3 ready deletePhoto jobs have no live handler"]);
  });
});
