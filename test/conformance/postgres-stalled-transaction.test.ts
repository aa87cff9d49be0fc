/**
 * PostgreSQL: a process stalled inside one of later's transactions (paused,
 * starved of CPU) past `idle_in_transaction_session_timeout`. The server
 * ends the session with a FATAL 25P03 error; when the process resumes, the
 * statement it sends next can be the one that receives that error (the
 * socket is read only after it is written). That is the connection lost,
 * as a `pg_terminate_backend` would be: a transient DATABASE_UNAVAILABLE,
 * which the transaction's caller may run again, never a bare driver error.
 *
 * The stall is made in-process: after a transaction's BEGIN, the client's
 * socket stops being read until the server has ended the session, then the
 * next statement is written before the socket is read again.
 */
import type pg from "pg";
import { afterEach, describe, expect, it } from "vitest";
import { LaterError, newJobId } from "@later/runtime";
import { oneSessionBackend, postgresUrl, withClient } from "../support/postgres.js";
import { waitFor } from "./harness.js";

const url = postgresUrl();
const NOW = 1_800_000_000_000;
const IDLE_MS = 200;

type Query = pg.PoolClient["query"];

describe.skipIf(url === null)("a transaction whose session the server ended while the process was stalled", () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  /**
   * The first `times` transactions (of all connections together) stall
   * after BEGIN (the backend's own, which sets the idle timeout
   * for the transaction) until the server ends the session.
   */
  async function stallTransactions(pool: pg.Pool, times: number): Promise<{ stalls: () => number }> {
    let stalls = 0;
    pool.on("connect", (client) => {
      const original = client.query.bind(client) as (...args: unknown[]) => Promise<unknown>;
      let afterBegin = false;
      client.query = ((...args: unknown[]) => {
        const text = typeof args[0] === "string" ? args[0] : (args[0] as { text: string }).text;
        if (/^BEGIN/i.test(text)) {
          afterBegin = true;
          return original(...args);
        }
        if (!afterBegin || stalls >= times) return original(...args);
        afterBegin = false;
        stalls++;
        const pid = (client as unknown as { processID: number }).processID;
        const socket = (client as unknown as { connection: { stream: NodeJS.ReadableStream } }).connection.stream;
        socket.pause();
        return (async () => {
          await waitFor(
            () => withClient(url!, async (c) => (await c.query("SELECT 1 FROM pg_stat_activity WHERE pid = $1", [pid])).rowCount === 0),
            `session ${pid} to be ended by the server`,
            10_000,
          );
          socket.resume();
          return original(...args); // written now; the server's FATAL is read after it, as the statement's own error
        })();
      }) as Query;
    });
    // The pool's one connection was opened before: the next statement opens one that stalls.
    const first = await pool.connect();
    first.release(true);
    return { stalls: () => stalls };
  }

  const job = (id: string) => ({ id, jobType: "work", payload: "{}", runAt: NOW, retryPolicy: null, topic: "t", partition: 0 });
  const stored = (pool: pg.Pool, table: string) => pool.query(`SELECT id FROM ${table}`).then((r) => r.rows.map((x) => x.id as string));

  it("an enqueue transaction that stalled once runs again and stores its job once", async () => {
    const { pool, backend, table } = await oneSessionBackend(cleanups, { idleInTransactionTimeoutMs: IDLE_MS });
    await backend.partitions.topicRegister({ topics: [{ name: "t", partitions: 1 }], now: NOW });
    const stall = await stallTransactions(pool, 1);
    const id = newJobId(NOW);
    expect(await backend.jobs.insertMany({ jobs: [job(id)], now: NOW })).toEqual({ stages: ["enqueued"] });
    expect(stall.stalls()).toBe(1);
    expect(await stored(pool, table)).toEqual([id]);
  });

  it("one that stalls on every try fails as a transient DATABASE_UNAVAILABLE and stores nothing", async () => {
    const { pool, backend, table } = await oneSessionBackend(cleanups, { idleInTransactionTimeoutMs: IDLE_MS });
    await backend.partitions.topicRegister({ topics: [{ name: "t", partitions: 1 }], now: NOW });
    const stall = await stallTransactions(pool, Number.POSITIVE_INFINITY);
    const failed = await backend.jobs.insertMany({ jobs: [job(newJobId(NOW))], now: NOW }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(LaterError);
    expect(failed).toMatchObject({ code: "DATABASE_UNAVAILABLE", transient: true });
    expect((failed as LaterError & { cause: { code: string } }).cause.code).toBe("25P03");
    expect(stall.stalls()).toBe(3);
    expect(await stored(pool, table)).toEqual([]);
  });
});
