/**
 * The packages as users install them: `pnpm pack` of runtime, codegen and
 * cli, then `npm install` of the tarballs into empty folders, twice side by
 * side (the registry is the real one; the SQLite app compiles better-sqlite3
 * from source, about two minutes on two cores):
 *
 * - an app on SQLite (better-sqlite3, no pg);
 * - an app on PostgreSQL (pg, and no better-sqlite3 in its node_modules).
 *
 * Each runs `later-gen`, type-checks every public entry and its own code
 * with `strict` and `skipLibCheck: false` and no driver type packages (so a
 * published `.d.ts` naming a driver's types fails here), runs one job
 * through the generated module, and runs `later` against its database.
 * Both check `@opentelemetry/api`, an optional peer that npm does not install
 * (nothing the runtime depends on needs it: prom-client 14 has no dependency
 * on it): every entry loads and a job runs with metrics without it, and
 * `tracing()` is `DRIVER_NOT_INSTALLED` naming it; the SQLite app then adds it
 * with `npm install @opentelemetry/api`, and `tracing()` works.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, it, type ExpectStatic } from "vitest";
import { createPostgresSchema, postgresUrl } from "../support/postgres.js";
import { mustRun, packWorkspace, PackedApp } from "./packed-app.js";

const INSTALL_TIMEOUT_MS = 20 * 60_000;

/** The kysely and TypeScript a user would add, within the ranges our packages declare (kysely 0.29 needs Node 22). */
const COMMON = ["kysely@^0.28", "typescript@5.9.3", "@types/node@^20"];

const SCHEMA = `export interface Greet { name: string; at: Date }
export interface Jobs {
  greet: Greet;
}
`;

/** Imports every entry (the public ones, and the internal one the CLI uses), so tsc checks every declaration file they reach. */
const ENTRIES = `import * as runtime from "@later/runtime";
import * as sqliteEntry from "@later/runtime/sqlite";
import * as postgresEntry from "@later/runtime/postgres";
import * as testing from "@later/runtime/testing";
import * as internal from "@later/runtime/internal";
import * as dashboard from "@later/runtime/dashboard";
import * as codegen from "@later/codegen";
export const entries = [runtime, sqliteEntry, postgresEntry, testing, internal, dashboard, codegen];
`;

/** One job enqueued through the generated module and processed; prints what the handler saw. `backend` is the expression making the backend. */
function main(imports: string, backend: string, autoMigrate: boolean): string {
  return `import { RetryPolicy } from "@later/runtime";
${imports}
import { JobsBuilder } from "./jobs.generated.js";

let processed!: (line: string) => void;
const done = new Promise<string>((resolve) => (processed = resolve));
const server = await new JobsBuilder<{ greeting: string }>({
  context: { greeting: "hello" },
  backend: ${backend},
  autoMigrate: ${autoMigrate},
  defaultRetryPolicy: RetryPolicy.noRetries(),
})
  .withGreetHandler(async (ctx, job) => processed(\`\${ctx.app.greeting} \${job.name} at \${job.at.toISOString()}\`))
  .build();
await server.jobs.greet.enqueue({ name: "world", at: new Date(0) });
console.log(await done);
await server.shutdown({ deadlineMs: 5_000 });
`;
}

/** later-gen, tsc, then the app itself; the job's line must come out. */
async function genCheckRun(app: PackedApp, env: Record<string, string> = {}): Promise<string> {
  const gen = await app.npx("later-gen", ["jobs.schema.ts"]);
  if (gen.code !== 0) throw new Error(`later-gen failed (${gen.code}):\n${gen.stdout}${gen.stderr}`);
  const tsc = await app.npx("tsc", ["-p", "tsconfig.json"]);
  if (tsc.code !== 0) throw new Error(`tsc (strict, skipLibCheck false) failed:\n${tsc.stdout}${tsc.stderr}`);
  return (await mustRun(process.execPath, ["dist/main.js"], { cwd: app.dir, env, timeoutMs: 60_000 })).stdout;
}

const JOB_LINE = "hello world at 1970-01-01T00:00:00.000Z";

/** The entries {@link OPTIONAL_PEERS} imports: the root, testing, both backends' and otel. */
const ENTRY_NAMES = ["@later/runtime", "@later/runtime/testing", "@later/runtime/sqlite", "@later/runtime/postgres", "@later/runtime/otel"];

/**
 * Run in an app after {@link genCheckRun} (it uses the compiled generated module and a migrated database,
 * `LATER_DATABASE_URL` and `LATER_SCHEMA` as the app's own run): whether `@opentelemetry/api` resolves;
 * every entry imported and one job run with metrics on, then whether anything of `@opentelemetry` was
 * loaded; `tracing()`, and whether it was loaded then. One JSON line. `require.cache` sees every load of
 * the package, `require` or `import` alike: its exports have no `import` condition, so both load its CommonJS build.
 */
const OPTIONAL_PEERS = `import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const failure = (e) => ({ code: e.code, name: e.name, message: e.message, driver: e.driver });
const isLaterError = (e) => { for (let p = Object.getPrototypeOf(e); p; p = Object.getPrototypeOf(p)) if (p.constructor?.name === "LaterError") return true; return false; };
const otelLoaded = () => Object.keys(require.cache).some((k) => k.includes("@opentelemetry"));
const out = { entries: {} };
try { require.resolve("@opentelemetry/api"); out.resolves = true; } catch (e) { out.resolves = failure(e); }
for (const entry of ${JSON.stringify(ENTRY_NAMES)}) {
  try { await import(entry); out.entries[entry] = "loaded"; } catch (e) { out.entries[entry] = failure(e); }
}
const { backendFromUrl, RetryPolicy } = await import("@later/runtime");
const { JobsBuilder } = await import("./dist/jobs.generated.js");
let processed;
const done = new Promise((resolve) => (processed = resolve));
const schema = process.env.LATER_SCHEMA;
const server = await new JobsBuilder({
  context: {},
  backend: await backendFromUrl(undefined, schema ? { postgres: { schema } } : {}),
  autoMigrate: false,
  defaultRetryPolicy: RetryPolicy.noRetries(),
})
  .withGreetHandler(async (ctx, job) => processed(job.name))
  .build();
await server.jobs.greet.enqueue({ name: "metrics", at: new Date(0) });
out.job = await done;
// The handler has returned; its outcome is written (and counted) by the time the shutdown resolves. Counters outlive it.
await server.shutdown({ deadlineMs: 5_000 });
out.metrics = (await server.metrics()).split("\\n").filter((l) => l.startsWith("later_job_transitions_total{") && l.includes('stage="success"'));
out.loadedByEntriesAndJob = otelLoaded();
const { tracing } = await import("@later/runtime/otel");
try { out.tracing = typeof tracing().attempt; } catch (e) { out.tracing = { ...failure(e), isLaterError: isLaterError(e) }; }
out.loadedByTracing = otelLoaded();
console.log(JSON.stringify(out));
`;

/**
 * `@opentelemetry/api` (X10): an optional peer of the runtime that nothing installs for the user, so it
 * is nowhere in the app's node_modules; every entry loads and a job runs with metrics without it, nothing
 * of `@opentelemetry` is loaded, and `tracing()` is `DRIVER_NOT_INSTALLED` naming it. With `addIt`, the
 * app then installs it (`npm install @opentelemetry/api`): the entries and the job still load nothing of
 * it, `tracing()` loads it and works.
 */
async function expectOptionalOpenTelemetry(app: PackedApp, expect: ExpectStatic, env: Record<string, string>, addIt: boolean): Promise<void> {
  const manifestOf = (pkg: string) => JSON.parse(readFileSync(join(app.dir, "node_modules", pkg, "package.json"), "utf8"));
  const runtime = manifestOf("@later/runtime");
  expect(runtime.peerDependencies["@opentelemetry/api"]).toBeTypeOf("string");
  expect(runtime.peerDependenciesMeta["@opentelemetry/api"]).toEqual({ optional: true });
  expect(runtime.dependencies["@opentelemetry/api"]).toBeUndefined();
  expect(manifestOf("prom-client").dependencies?.["@opentelemetry/api"]).toBeUndefined();
  expect(app.copiesOf("@opentelemetry/api")).toEqual([]);
  app.write({ "optional-peers.mjs": OPTIONAL_PEERS });
  const check = async () => {
    const { stdout } = await mustRun(process.execPath, ["optional-peers.mjs"], { cwd: app.dir, env, timeoutMs: 60_000 });
    const line = stdout.split("\n").find((l) => l.startsWith("{"));
    if (line === undefined) throw new Error(`optional-peers.mjs printed no result:\n${stdout}`);
    return JSON.parse(line);
  };

  const absent = await check();
  expect(absent.resolves).toMatchObject({ code: "MODULE_NOT_FOUND" });
  expect(absent.entries).toEqual(Object.fromEntries(ENTRY_NAMES.map((e) => [e, "loaded"])));
  expect(absent).toMatchObject({ job: "metrics", loadedByEntriesAndJob: false, loadedByTracing: false });
  expect(absent.metrics).toEqual([expect.stringMatching(/job_type="greet".* 1$/)]);
  expect(absent.tracing).toMatchObject({ code: "DRIVER_NOT_INSTALLED", driver: "@opentelemetry/api", isLaterError: true });
  expect(absent.tracing.message).toContain("npm install @opentelemetry/api");
  if (!addIt) return;

  await app.add(["@opentelemetry/api"]);
  expect(app.copiesOf("@opentelemetry/api")).toEqual([join(app.dir, "node_modules/@opentelemetry/api")]);
  const present = await check();
  expect(present).toMatchObject({ resolves: true, job: "metrics", loadedByEntriesAndJob: false, tracing: "function", loadedByTracing: true });
  expect(present.metrics).toEqual([expect.stringMatching(/job_type="greet".* 1$/)]);
  expect(present.entries).toEqual(Object.fromEntries(ENTRY_NAMES.map((e) => [e, "loaded"])));
}
const pgUrl = postgresUrl();

describe("the packed packages installed with npm into an empty app", () => {
  let root: string;
  let tarballs: string[];

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), "later-pack-"));
    tarballs = await packWorkspace(join(root, "tarballs"));
  }, 5 * 60_000);

  afterAll(() => {
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it("every tarball carries its README; cli and codegen their committed bin launchers", { concurrent: true }, async ({ expect }) => {
    const listing = async (tarball: string) => (await mustRun("tar", ["tzf", tarball], { cwd: root })).stdout.split("\n");
    const [runtime, codegen, cli] = await Promise.all(tarballs.map(listing));
    for (const files of [runtime, codegen, cli]) expect(files).toContain("package/README.md");
    expect(codegen).toContain("package/bin/later-gen.js");
    expect(cli).toEqual(expect.arrayContaining(["package/bin/later.js", "package/bin/later-gen.js"]));
  });

  it("an app on SQLite: later-gen, strict tsc, one job, later jobs list; no @opentelemetry/api, then added", {
    concurrent: true,
    timeout: INSTALL_TIMEOUT_MS,
  }, async ({ expect }) => {
    const app = new PackedApp(join(root, "sqlite-app"));
    app.write({
      "jobs.schema.ts": SCHEMA,
      "entries.ts": ENTRIES,
      "main.ts": main(`import { sqlite } from "@later/runtime/sqlite";`, `sqlite({ file: "app.db" })`, true),
    });
    await app.install(tarballs, ["better-sqlite3@^12", ...COMMON]);
    expect(app.has("pg")).toBe(false);
    expect(app.copiesOf("kysely")).toHaveLength(1);

    expect(await genCheckRun(app)).toContain(JOB_LINE);

    const list = await app.npx("later", ["jobs", "list", "--database", "sqlite:app.db", "--json"]);
    expect(list.stderr).toBe("");
    expect(list.code).toBe(0);
    expect(JSON.parse(list.stdout)).toMatchObject([{ jobType: "greet", stage: "success" }]);

    // pg is not installed: asking for PostgreSQL names the package to add, in one line.
    const missing = await app.npx("later", ["migrate", "status", "--database", "postgres://nobody@127.0.0.1:1/none"]);
    expect(missing.code).toBe(1);
    expect(missing.stderr.trim()).toMatch(/^later: .*npm install pg/);
    expect(missing.stderr.trim().split("\n")).toHaveLength(1);

    await expectOptionalOpenTelemetry(app, expect, { LATER_DATABASE_URL: "sqlite:app.db" }, true);
  });

  it("an app on PostgreSQL with pg and no better-sqlite3: later migrate, strict tsc, one job; no @opentelemetry/api", {
    concurrent: true,
    skip: pgUrl === null,
    timeout: INSTALL_TIMEOUT_MS,
  }, async ({ expect }) => {
    const db = await createPostgresSchema();
    try {
      const app = new PackedApp(join(root, "postgres-app"));
      app.write({
        "jobs.schema.ts": SCHEMA,
        "entries.ts": ENTRIES,
        // One setting for the app and the CLI: backendFromUrl() reads LATER_DATABASE_URL, as `later` does.
        "main.ts": main(
          `import { backendFromUrl } from "@later/runtime";`,
          `await backendFromUrl(undefined, { postgres: { schema: process.env.LATER_SCHEMA! } })`,
          false,
        ),
      });
      await app.install(tarballs, ["pg@^8", ...COMMON]);
      expect(app.has("better-sqlite3")).toBe(false);
      expect(app.copiesOf("kysely")).toHaveLength(1);

      const migrate = await app.npx("later", ["migrate", "up", "--schema", db.schema], { LATER_DATABASE_URL: db.url });
      expect(migrate.stderr).toBe("");
      expect(migrate.code).toBe(0);

      expect(await genCheckRun(app, { LATER_DATABASE_URL: db.url, LATER_SCHEMA: db.schema })).toContain(JOB_LINE);

      // better-sqlite3 is not installed: asking for SQLite names the package to add, in one line.
      const missing = await app.npx("later", ["migrate", "up", "--database", "sqlite:app.db"]);
      expect(missing.code).toBe(1);
      expect(missing.stderr.trim()).toMatch(/^later: .*npm install better-sqlite3/);
      expect(missing.stderr.trim().split("\n")).toHaveLength(1);

      await expectOptionalOpenTelemetry(app, expect, { LATER_DATABASE_URL: db.url, LATER_SCHEMA: db.schema }, false);
    } finally {
      await db.dispose();
    }
  });
});
