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
 * Both check `@opentelemetry/api`, an optional peer that npm installs anyway
 * as prom-client's dependency: later loads it only in `tracing()`, which is
 * `DRIVER_NOT_INSTALLED` naming it once the package is moved away.
 */
import { mkdtempSync, readFileSync, renameSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, it, type ExpectStatic } from "vitest";
import { createPostgresSchema, postgresUrl } from "../support/postgres.js";
import { mustRun, packWorkspace, PackedApp, run } from "./packed-app.js";

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

/**
 * Run in each app with argv[2] "present" or "hidden" (`@opentelemetry/api` moved out of node_modules):
 * whether it resolves, what the entries that do not reach prom-client load of it, `tracing()`, and
 * last the root and testing entries (which load prom-client). One JSON line.
 */
const OPTIONAL_PEERS = `import { createRequire } from "node:module";
const require = createRequire(import.meta.url);
const failure = (e) => ({ code: e.code, name: e.name, message: e.message, driver: e.driver });
const isLaterError = (e) => { for (let p = Object.getPrototypeOf(e); p; p = Object.getPrototypeOf(p)) if (p.constructor?.name === "LaterError") return true; return false; };
const otelLoaded = () => Object.keys(require.cache).some((k) => k.includes("@opentelemetry"));
const out = { entries: {} };
try { require.resolve("@opentelemetry/api"); out.resolves = true; } catch (e) { out.resolves = failure(e); }
for (const entry of ["@later/runtime/sqlite", "@later/runtime/postgres", "@later/runtime/otel"]) {
  try { await import(entry); out.entries[entry] = "loaded"; } catch (e) { out.entries[entry] = failure(e); }
}
out.loadedByEntries = otelLoaded();
const { tracing } = await import("@later/runtime/otel");
try { out.tracing = typeof tracing().attempt; } catch (e) { out.tracing = { ...failure(e), isLaterError: isLaterError(e) }; }
out.loadedByTracing = otelLoaded();
try { await import("@later/runtime"); await import("@later/runtime/testing"); out.root = "loaded"; } catch (e) { out.root = failure(e); }
console.log(JSON.stringify(out));
`;

/**
 * `@opentelemetry/api` (X10): an optional peer of the runtime, which npm installs anyway, as a dependency
 * of prom-client 15 (whose default metrics require it at load, so the root and testing entries load it
 * through prom-client). later's own code loads it only in `tracing()`: the sqlite, postgres and otel
 * entries do not. With it moved away, those entries still load and `tracing()` is `DRIVER_NOT_INSTALLED`
 * naming it; the root entry then fails in prom-client (a state an npm install does not produce).
 */
async function expectOptionalOpenTelemetry(app: PackedApp, expect: ExpectStatic): Promise<void> {
  const manifestOf = (pkg: string) => JSON.parse(readFileSync(join(app.dir, "node_modules", pkg, "package.json"), "utf8"));
  const runtime = manifestOf("@later/runtime");
  expect(runtime.peerDependencies["@opentelemetry/api"]).toBeTypeOf("string");
  expect(runtime.peerDependenciesMeta["@opentelemetry/api"]).toEqual({ optional: true });
  expect(runtime.dependencies["@opentelemetry/api"]).toBeUndefined();
  expect(manifestOf("prom-client").dependencies["@opentelemetry/api"]).toBeTypeOf("string");
  expect(app.copiesOf("@opentelemetry/api")).toEqual([join(app.dir, "node_modules/@opentelemetry/api")]);
  app.write({ "optional-peers.mjs": OPTIONAL_PEERS });
  // The line comes first: with the package away, the root entry's failed import also ends the process with code 1.
  const check = async (mode: string) => {
    const result = await run(process.execPath, ["optional-peers.mjs", mode], { cwd: app.dir, timeoutMs: 60_000 });
    const line = result.stdout.split("\n").find((l) => l.startsWith("{"));
    if (line === undefined) throw new Error(`optional-peers.mjs ${mode} printed no result (exit ${result.code}):\n${result.stdout}${result.stderr}`);
    return JSON.parse(line);
  };

  const present = await check("present");
  expect(present).toMatchObject({ resolves: true, loadedByEntries: false, tracing: "function", loadedByTracing: true, root: "loaded" });
  expect(Object.values(present.entries)).toEqual(["loaded", "loaded", "loaded"]);

  const api = join(app.dir, "node_modules/@opentelemetry/api");
  const hidden = join(app.dir, "otel-api-hidden");
  renameSync(api, hidden);
  try {
    const absent = await check("hidden");
    expect(absent.resolves).toMatchObject({ code: "MODULE_NOT_FOUND" });
    expect(Object.values(absent.entries)).toEqual(["loaded", "loaded", "loaded"]);
    expect(absent.tracing).toMatchObject({ code: "DRIVER_NOT_INSTALLED", driver: "@opentelemetry/api", isLaterError: true });
    expect(absent.tracing.message).toContain("npm install @opentelemetry/api");
    expect(absent.root).toMatchObject({ code: "MODULE_NOT_FOUND" });
    expect(absent.root.message).toContain("prom-client");
  } finally {
    renameSync(hidden, api);
  }
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

  it("an app on SQLite: later-gen, strict tsc, one job, later jobs list", { concurrent: true, timeout: INSTALL_TIMEOUT_MS }, async ({ expect }) => {
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

    await expectOptionalOpenTelemetry(app, expect);
  });

  it("an app on PostgreSQL with pg and no better-sqlite3: later migrate, strict tsc, one job", {
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

      await expectOptionalOpenTelemetry(app, expect);
    } finally {
      await db.dispose();
    }
  });
});
