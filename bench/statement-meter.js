// Counts and times every statement that any pg client in this process sends
// (bench/profile-postgres.js). It wraps pg.Client.prototype.query, which the
// pool, Kysely's PostgresDialect and the runtime's listener all go through.
// `pg` here is the same module instance as the runtime's (one pnpm store path).
import pg from "pg";
import { wallNow } from "./lib.js";

export class StatementMeter {
  /** @param labelOf (name, text) -> label of a statement, or undefined for "other" */
  constructor(labelOf) {
    this.labelOf = labelOf;
    this.stats = new Map(); // label -> { calls, totalMs, maxMs }
    this.original = null;
  }

  install() {
    const meter = this;
    const original = (this.original = pg.Client.prototype.query);
    pg.Client.prototype.query = function query(...args) {
      const [config, values, callback] = args;
      const text = typeof config === "string" ? config : (config?.text ?? "");
      const label = meter.label(config?.name, text);
      const t0 = wallNow();
      const record = () => meter.record(label, wallNow() - t0);
      const cbIndex = [values, callback].findIndex((a) => typeof a === "function");
      if (cbIndex >= 0) {
        const wrapped = [...args];
        const cb = wrapped[cbIndex + 1];
        wrapped[cbIndex + 1] = function (...r) {
          record();
          return cb.apply(this, r);
        };
        return original.apply(this, wrapped);
      }
      const result = original.apply(this, args);
      if (result && typeof result.then === "function") result.then(record, record);
      else if (result && typeof result.on === "function") {
        result.on("end", record);
        result.on("error", record);
      }
      return result;
    };
  }

  uninstall() {
    if (this.original) pg.Client.prototype.query = this.original;
  }

  label(name, text) {
    const known = this.labelOf(name, text);
    if (known) return known;
    return text.replace(/\s+/g, " ").trim().slice(0, 48) || "(empty)";
  }

  record(label, elapsed) {
    const s = this.stats.get(label) ?? { calls: 0, totalMs: 0, maxMs: 0 };
    s.calls++;
    s.totalMs += elapsed;
    s.maxMs = Math.max(s.maxMs, elapsed);
    this.stats.set(label, s);
  }

  /** Returns the stats since the last take() and starts afresh. */
  take() {
    const s = this.stats;
    this.stats = new Map();
    return s;
  }
}

/**
 * Summed user+system CPU ms of every process named `postgres` on this machine
 * (the local server), from /proc; with `pids`, of those processes only (the
 * backends serving one database, say).
 */
export async function postgresServerCpuMs(pids) {
  const { readdir, readFile } = await import("node:fs/promises");
  const tick = 1000 / 100; // CLK_TCK is 100 on Linux
  let total = 0;
  for (const pid of pids?.map(String) ?? (await readdir("/proc").catch(() => []))) {
    if (!/^\d+$/.test(pid)) continue;
    const stat = await readFile(`/proc/${pid}/stat`, "utf8").catch(() => "");
    const close = stat.lastIndexOf(")");
    if (!stat.slice(stat.indexOf("(") + 1, close).startsWith("postgres")) continue;
    const fields = stat.slice(close + 2).split(" ");
    total += (Number(fields[11]) + Number(fields[12])) * tick; // utime, stime
  }
  return total;
}
