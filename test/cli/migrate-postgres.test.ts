/**
 * `later migrate status|up` against PostgreSQL (the server found by
 * test/support/postgres-global-setup.ts), in a throwaway schema dropped
 * after each test. Skipped, with the setup's notice, when there is none.
 */
import { afterEach, describe, expect, it } from "vitest";
import { createPostgresSchema, postgresUrl, withClient, type PostgresSchema } from "../support/postgres.js";
import { hasStackTrace, later } from "./later-cli.js";

describe.skipIf(postgresUrl() === null)("later migrate (postgres)", () => {
  const schemas: PostgresSchema[] = [];
  afterEach(async () => {
    await Promise.all(schemas.splice(0).map((s) => s.dispose()));
  });
  const fresh = async () => {
    const db = await createPostgresSchema();
    schemas.push(db);
    return { db, args: ["--database", db.url, "--schema", db.schema] };
  };
  const schemaExists = (db: PostgresSchema) =>
    withClient(db.url, async (c) => (await c.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [db.schema])).rowCount === 1);

  it("status (behind) → up → status (current) → up again (nothing to do)", async () => {
    const { db, args } = await fresh();
    const before = later(["migrate", "status", ...args]);
    expect(before.status).toBe(0);
    expect(before.stdout).toMatch(/^current version 0$/m);
    expect(before.stdout).toContain(`run \`later migrate up --database ${db.url} --schema ${db.schema}\``);
    expect(before.stdout).toMatch(/^pending\n {2,}1 {2}jobs$/m);
    expect(await schemaExists(db)).toBe(false); // inspecting created nothing

    const up = later(["migrate", "up", ...args]);
    expect(up.status).toBe(0);
    expect(up.stdout).toMatch(/^applied migration 1 \(jobs\)$/m);
    expect(await schemaExists(db)).toBe(true);

    const after = later(["migrate", "status", ...args]);
    expect(after.status).toBe(0);
    expect(after.stdout).toMatch(/^state +up to date$/m);

    const again = later(["migrate", "up", ...args]);
    expect(again.status).toBe(0);
    expect(again.stdout).toMatch(/^nothing to apply: /m);
  });

  it("jobs on an unmigrated schema: the SchemaVersionError names the command to run", async () => {
    const { db, args } = await fresh();
    const result = later(["jobs", "list", ...args]);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(
      /^later: the later schema in this database is behind \(version 0, this release needs \d+\): run `later migrate up --database /,
    );
    expect(result.stderr).toContain(`--schema ${db.schema}\``);
    expect(result.stderr.trim().split("\n")).toHaveLength(1);
    later(["migrate", "up", ...args]);
    const listed = later(["jobs", "list", ...args]);
    expect(listed.status).toBe(0);
    expect(listed.stdout).toMatch(/^no jobs in namespace "default"$/m);
  });

  it("an unreachable server is a one-line error with the password hidden", () => {
    const result = later(["migrate", "status", "--database", "postgres://postgres:hunter2@127.0.0.1:1/postgres"]);
    expect(result.status).toBe(1);
    expect(result.stderr).toMatch(/^later: cannot connect to PostgreSQL at [^\n]*\n$/);
    expect(result.stderr).not.toContain("hunter2");
    expect(hasStackTrace(result.stderr)).toBe(false);
  });
});
