/**
 * X9: the group claim takes a type's ready groups in turn in the byte order
 * of their names (UTF-8), on both backends and whatever the database's
 * collation. On PostgreSQL the test makes its own database with ICU's en-US
 * collation, in which the same names sort otherwise (lower case first, `é`
 * beside `e`): the walk compares `group_key` in the "C" collation
 * (migration 26), so its order is SQLite's.
 */
import { randomBytes } from "node:crypto";
import pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { newJobId } from "@later/runtime";
import { type Backend, prepareBackend } from "@later/runtime/internal";
import { postgres } from "@later/runtime/postgres";
import { postgresUrl, withClient } from "../support/postgres.js";
import { recordedSqlite } from "../support/recorded-backends.js";

const url = postgresUrl();
const NOW = 1_800_000_000_000;
const NAMES = ["b", "B", "a", "Z", "é", "e"];
const BYTE_ORDER = ["B", "Z", "a", "b", "e", "é"];

/** One job of each group in `NAMES`, a group limit on their type, then claims of one job: the groups in the order taken. */
async function groupsInTurn(backend: Backend): Promise<string[]> {
  const jobs = NAMES.map((group, n) => ({ id: newJobId(NOW + n), jobType: "t", payload: "{}", runAt: NOW - 1_000, retryPolicy: null, group }));
  await backend.jobs.insertMany({ jobs, now: NOW });
  await backend.jobs.limitsSet({ jobTypes: ["t"], limits: [{ jobType: "t", concurrency: null, rateLimit: null, groupConcurrency: 10 }], now: NOW });
  const groupOf = new Map(jobs.map((j) => [j.id, j.group]));
  const taken: string[] = [];
  for (const _ of NAMES) {
    const { jobs: claimed } = await backend.jobs.claimReady({
      owner: "w1",
      limit: 1,
      now: NOW,
      leaseExpiresAt: NOW + 60_000,
      jobTypes: [],
      limitedTypes: ["t"],
    });
    expect(claimed).toHaveLength(1);
    taken.push(groupOf.get(claimed[0]!.id)!);
  }
  return taken;
}

describe("group names in turn, byte by byte (X9)", () => {
  const cleanups: (() => unknown)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it("SQLite: the groups are taken in the byte order of their names", async () => {
    const { backend } = await recordedSqlite(cleanups);
    expect(await groupsInTurn(backend)).toEqual(BYTE_ORDER);
  });

  it.skipIf(url === null)("PostgreSQL: the groups are taken in the byte order of their names on a database whose collation is ICU's en-US", async () => {
    const name = `later_icu_${process.pid}_${randomBytes(3).toString("hex")}`;
    await withClient(url!, (c) => c.query(`CREATE DATABASE ${name} TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE 'en-US'`));
    cleanups.push(() => withClient(url!, (c) => c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)));
    const dbUrl = new URL(url!);
    dbUrl.pathname = `/${name}`;
    // The database's own order of these names is not their byte order: the test can tell the two apart.
    const own = await withClient(dbUrl.toString(), (c) => c.query<{ k: string[] }>("SELECT array_agg(k ORDER BY k) AS k FROM unnest($1::text[]) k", [NAMES]));
    expect(own.rows[0]!.k).not.toEqual(BYTE_ORDER);
    const pool = new pg.Pool({ connectionString: dbUrl.toString(), max: 2 });
    cleanups.push(() => pool.end());
    const backend = postgres({ pool, schema: "later", listen: false });
    await prepareBackend(backend, true);
    cleanups.push(() => backend.close());
    expect(await groupsInTurn(backend)).toEqual(BYTE_ORDER);
  });
});
