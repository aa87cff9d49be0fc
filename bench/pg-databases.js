// Fresh PostgreSQL databases for bench/postgres.js: one per system and
// phase, created on the server of BENCH_PG_URL and dropped after use; and
// one-off statements for the system modules' stored counts.
import pg from "pg";

/** Runs one statement on a connection of its own. */
export async function queryOnce(url, text, values) {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await client.query(text, values);
  } finally {
    await client.end();
  }
}

export class BenchDatabases {
  /** @param adminUrl a database URL whose user may CREATE DATABASE (e.g. postgres://postgres@127.0.0.1:5432/postgres) */
  constructor(adminUrl) {
    this.adminUrl = adminUrl;
    this.prefix = `later_bench_${process.pid}_`;
    this.seq = 0;
    this.live = new Set();
  }

  admin(sql) {
    return queryOnce(this.adminUrl, sql);
  }

  async serverVersion() {
    return (await this.admin("show server_version")).rows[0].server_version;
  }

  /** Creates an empty database; resolves to its URL. */
  async create(label) {
    const name = `${this.prefix}${String(++this.seq).padStart(3, "0")}_${label.replace(/[^a-z0-9]+/gi, "_").toLowerCase()}`.slice(0, 63);
    await this.admin(`create database "${name}"`);
    this.live.add(name);
    const url = new URL(this.adminUrl);
    url.pathname = `/${name}`;
    return { name, url: url.toString() };
  }

  async drop(name) {
    this.live.delete(name);
    await this.admin(`drop database if exists "${name}" with (force)`);
  }

  async dropAll() {
    for (const name of [...this.live]) await this.drop(name).catch(() => {});
  }
}
