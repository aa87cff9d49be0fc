/**
 * One database URL for the application and the CLI: `backendFromUrl(url)`
 * opens the database `later --database URL` reads (on every backend), the
 * CLI's namespace comes from `LATER_NAMESPACE` unless `--namespace` is given,
 * and a URL given to `sqlite({ file })` or `postgres({ connectionString })`
 * is refused with a message naming the right call.
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { BackgroundJobServer, backendFromUrl, LaterError } from "@later/runtime";
import { postgres } from "@later/runtime/postgres";
import { sqlite } from "@later/runtime/sqlite";
import { BACKENDS, type TestDatabase } from "../conformance/backends.js";
import { later, tempDir } from "./later-cli.js";

/** The error `body` throws or rejects with (fails the test when there is none). */
async function errorOf(body: () => unknown): Promise<LaterError> {
  try {
    await body();
  } catch (error) {
    expect(error).toBeInstanceOf(LaterError);
    return error as LaterError;
  }
  throw new Error("expected a LaterError");
}

describe.each(BACKENDS)("backendFromUrl and the CLI on $name", (entry) => {
  const dbs: TestDatabase[] = [];
  const env = { url: process.env.LATER_DATABASE_URL, ns: process.env.LATER_NAMESPACE };
  afterEach(async () => {
    await Promise.all(dbs.splice(0).map((d) => d.dispose()));
    for (const [name, value] of [
      ["LATER_DATABASE_URL", env.url],
      ["LATER_NAMESPACE", env.ns],
    ] as const) {
      if (value === undefined) delete process.env[name];
      else process.env[name] = value;
    }
  });

  /** A server on `backend` that enqueues one job due in an hour (so it stays put) and stops; resolves to its id. */
  async function enqueueThrough(backend: Awaited<ReturnType<typeof backendFromUrl>>): Promise<string> {
    const server = await BackgroundJobServer.start({
      backend,
      context: {},
      autoMigrate: true,
      workerCount: 1,
      handlers: { note: { handle: () => undefined } },
    });
    try {
      return await server.publisher.enqueue("note", { text: "from the app" }, { delayMs: 3_600_000 });
    } finally {
      await server.shutdown({ deadlineMs: 0 });
    }
  }

  it("the job an app enqueues through backendFromUrl(url) is the one `later jobs show --database url` finds, in LATER_NAMESPACE", async () => {
    const db = await entry.createDatabase();
    dbs.push(db);
    const backend = await backendFromUrl(db.url, { namespace: "shop", ...(db.schema ? { postgres: { schema: db.schema } } : {}) });
    expect(backend.namespace).toBe("shop");
    const id = await enqueueThrough(backend);
    const cli = ["--database", db.url, ...(db.schema ? ["--schema", db.schema] : [])];

    const shown = later(["jobs", "show", id, ...cli], { env: { LATER_NAMESPACE: "shop" } });
    expect(shown.stderr).toBe("");
    expect(shown.status).toBe(0);
    expect(shown.stdout).toMatch(new RegExp(`^id +${id}$`, "m"));
    expect(shown.stdout).toMatch(/^stage +delayed$/m);

    // --namespace wins over LATER_NAMESPACE.
    const elsewhere = later(["jobs", "show", id, ...cli, "--namespace", "other"], { env: { LATER_NAMESPACE: "shop" } });
    expect(elsewhere.status).toBe(1);
    expect(elsewhere.stderr).toContain(`job ${id} not found in namespace "other"`);
    // Neither: the default namespace.
    const unscoped = later(["jobs", "list", ...cli]);
    expect(unscoped.stdout).toMatch(/^no jobs in namespace "default"$/m);
    // Every reading command takes it: list and recurring list too.
    const listed = later(["jobs", "list", ...cli], { env: { LATER_NAMESPACE: "shop" } });
    expect(listed.stdout).toContain(id);
    const recurring = later(["recurring", "list", ...cli], { env: { LATER_NAMESPACE: "shop" } });
    expect(recurring.stdout).toMatch(/^no recurring schedules in namespace "shop"$/m);
  });

  it("backendFromUrl() reads LATER_DATABASE_URL and LATER_NAMESPACE, as the CLI does", async () => {
    const db = await entry.createDatabase();
    dbs.push(db);
    process.env.LATER_DATABASE_URL = db.url;
    process.env.LATER_NAMESPACE = "from-env";
    const backend = await backendFromUrl(undefined, db.schema ? { postgres: { schema: db.schema } } : {});
    expect(backend.namespace).toBe("from-env");
    const id = await enqueueThrough(backend);
    const shown = later(["jobs", "show", id, ...(db.schema ? ["--schema", db.schema] : [])], {
      env: { LATER_DATABASE_URL: db.url, LATER_NAMESPACE: "from-env" },
    });
    expect(shown.status).toBe(0);
    expect(shown.stdout).toMatch(new RegExp(`^id +${id}$`, "m"));
  });
});

describe("database URLs", () => {
  const dir = tempDir();
  const saved = process.env.LATER_DATABASE_URL;
  afterEach(() => {
    if (saved === undefined) delete process.env.LATER_DATABASE_URL;
    else process.env.LATER_DATABASE_URL = saved;
  });

  it("sqlite:///abs/path and sqlite:rel both open the file the URL names", async () => {
    const file = join(dir, "abs form.db");
    const backend = await backendFromUrl(`sqlite://${encodeURI(file)}`);
    await backend.open();
    await backend.close();
    expect(existsSync(file)).toBe(true);
    const relative = await backendFromUrl("sqlite:later.db");
    expect((relative as unknown as { file: string }).file).toBe("later.db");
  });

  it("no URL, or a URL of no known form, is INVALID_CONFIG saying what to give", async () => {
    delete process.env.LATER_DATABASE_URL;
    const none = await errorOf(() => backendFromUrl());
    expect(none.code).toBe("INVALID_CONFIG");
    expect(none.message).toContain("pass one (sqlite:PATH, sqlite:///ABSOLUTE/PATH or postgres://USER@HOST:PORT/DB) or set LATER_DATABASE_URL");
    const mysql = await errorOf(() => backendFromUrl("mysql://root@localhost/app"));
    expect(mysql.code).toBe("INVALID_CONFIG");
    expect(mysql.message).toBe("not a database URL; expected sqlite:PATH, sqlite:///ABSOLUTE/PATH or postgres://USER@HOST:PORT/DB");
    const path = await errorOf(() => backendFromUrl("later.db"));
    expect(path.code).toBe("INVALID_CONFIG");
    const host = await errorOf(() => backendFromUrl("sqlite://host/later.db"));
    expect(host.message).toContain("sqlite:// URLs take an absolute path");
  });

  it("the CLI refuses the same URLs with the same words, as a usage error", () => {
    const result = later(["jobs", "list", "--database", "mysql://root@localhost/app"]);
    expect(result.status).toBe(2);
    expect(result.stderr).toContain("not a database URL; expected sqlite:PATH, sqlite:///ABSOLUTE/PATH or postgres://USER@HOST:PORT/DB");
  });

  it("sqlite({ file: 'sqlite:…' }) is refused, naming backendFromUrl and the path; no file is created", async () => {
    const error = await errorOf(() => sqlite({ file: "sqlite:later.db" }));
    expect(error.code).toBe("INVALID_CONFIG");
    expect(error.message).toBe(
      'sqlite(): `file` is a path, not a URL: use backendFromUrl("sqlite:later.db") (from "@later/runtime"), or sqlite({ file: "later.db" })',
    );
    const server = await errorOf(() =>
      BackgroundJobServer.start({ backend: sqlite({ file: `sqlite://${join(dir, "x.db")}` }), context: {}, autoMigrate: true, handlers: {} }),
    );
    expect(server.message).toContain(`sqlite({ file: ${JSON.stringify(join(dir, "x.db"))} })`);
    expect((await errorOf(() => sqlite({ file: "postgres://localhost/app" }))).message).toContain("use postgres({ connectionString })");
    // Before, the first call made a file literally named `sqlite:later.db` in the working directory.
    expect(existsSync("sqlite:later.db")).toBe(false);
    expect(readdirSync(dir).filter((f) => f.includes("x.db"))).toEqual([]);
  });

  it("postgres({ connectionString: 'sqlite:…' }) is refused, naming sqlite() and backendFromUrl, before any connection", async () => {
    const error = await errorOf(() => postgres({ connectionString: "sqlite:later.db" }));
    expect(error.code).toBe("INVALID_CONFIG");
    expect(error.message).toBe(
      'postgres(): `connectionString` is a SQLite URL: use sqlite({ file: "later.db" }) from "@later/runtime/sqlite", or backendFromUrl("sqlite:later.db") from "@later/runtime"',
    );
  });
});
