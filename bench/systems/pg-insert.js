// A plain one-row INSERT through pg, as a floor for what an enqueue on PostgreSQL can cost: the same
// JSON payload as text, into a table with a text primary key (a ULID-like id made here, as later's is)
// and nothing else, on a pool of 10 connections (the size later's backend uses). Enqueue only: there
// is nothing to process. Named prepared statements, as later's hot path uses.
import pg from "pg";
import { queryOnce } from "../pg-databases.js";

export const completionIsStored = true;

const TABLE = "bench_plain_jobs";

export async function prepare(target) {
  await queryOnce(target.pgUrl, `CREATE TABLE IF NOT EXISTS ${TABLE} (id text COLLATE "C" PRIMARY KEY, payload text NOT NULL)`);
}

let seq = 0;
/** Increasing ids of the same length as later's (26 characters), made without the database. */
const nextId = () => `${Date.now().toString(36).padStart(10, "0")}${String(++seq).padStart(16, "0")}`;

export async function openEnqueuer(target) {
  const pool = new pg.Pool({ connectionString: target.pgUrl, max: 10 });
  const one = { name: "bench_plain_insert", text: `INSERT INTO ${TABLE} (id, payload) VALUES ($1, $2)` };
  return {
    bulk: (payloads) =>
      pool.query({
        name: "bench_plain_insert_many",
        text: `INSERT INTO ${TABLE} (id, payload) SELECT * FROM unnest($1::text[], $2::text[])`,
        values: [payloads.map(() => nextId()), payloads.map((p) => JSON.stringify(p))],
      }),
    single: (payload) => pool.query({ ...one, values: [nextId(), JSON.stringify(payload)] }),
    close: () => pool.end(),
  };
}
