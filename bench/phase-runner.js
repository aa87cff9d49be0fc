// Starts bench/system-phase.js children for bench/postgres.js and collects
// their results. Every child has a hard timeout; killAll() ends any left.
import { fork } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { wallNow } from "./lib.js";
import { postgresServerCpuMs } from "./statement-meter.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const children = new Set();
/** How long worker children get to stop and report after "stop". */
const STOP_TIMEOUT_MS = 20_000;

export function killAll() {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill("SIGKILL");
}

/** Forks `script` (a file of bench/, default system-phase.js) with `cfg` as its argv[2]; killAll() ends it if it is still running. */
export function spawnPhase(cfg, script = "system-phase.js") {
  const child = fork(path.join(here, script), [JSON.stringify(cfg)], {
    cwd: path.resolve(here, ".."),
    stdio: ["ignore", "inherit", "inherit", "ipc"],
  });
  children.add(child);
  child.on("exit", () => children.delete(child));
  return child;
}

/** Resolves to the child's first message of `type` (or its final { ok } message when `type` is "result"), or { error } on exit/timeout. */
export function awaitMessage(child, type, timeoutMs) {
  return new Promise((resolve) => {
    const done = (v) => {
      clearTimeout(timer);
      child.off("message", onMessage);
      child.off("exit", onExit);
      resolve(v);
    };
    const onMessage = (m) => {
      if (type === "result" && "ok" in m) done(m.ok ? m.result : { error: m.error, errors: m.errors });
      else if (m?.type === type) done(m);
    };
    const onExit = (code, signal) => done({ error: `exited (code ${code}, signal ${signal}) before "${type}"` });
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      done({ error: `killed after ${timeoutMs} ms waiting for "${type}"` });
    }, timeoutMs);
    child.on("message", onMessage);
    child.on("exit", onExit);
  });
}

/** A phase that reports one result: bulk, single, prefill, latency. */
export function runPhase(cfg, timeoutMs, script) {
  return awaitMessage(spawnPhase(cfg, script), "result", timeoutMs);
}

/**
 * Processing with `processes` worker children on one prefilled store of `n`
 * jobs. The clock starts just before "go" and stops at the wall time of the
 * n-th stored completion (or, for systems whose completion signal precedes
 * the write, when child 0 sees every job stored as done).
 */
export async function runWork(cfg, { processes, completionIsStored, deadlineMs }) {
  const kids = Array.from({ length: processes }, (_, i) => spawnPhase({ ...cfg, phase: "work", reportStored: i === 0 }));
  const ready = await Promise.all(kids.map((c) => awaitMessage(c, "ready", 30_000)));
  const notReady = ready.find((r) => r.error);
  if (notReady) {
    for (const c of kids) c.kill("SIGKILL");
    return notReady;
  }

  const latest = kids.map(() => ({ done: 0, at: 0 }));
  let allDone;
  const allDonePromise = new Promise((r) => (allDone = r));
  for (const [i, c] of kids.entries()) {
    c.on("message", (m) => {
      if (m?.type !== "progress") return;
      latest[i] = m;
      if (latest.reduce((s, x) => s + x.done, 0) >= cfg.n) allDone(true);
    });
  }
  const results = kids.map((c) => awaitMessage(c, "result", deadlineMs + 60_000 + STOP_TIMEOUT_MS));
  // The PostgreSQL server's CPU (every postgres process of this machine, from /proc), read while the workers'
  // connections are open: what the database spent on the phase (issue 31, point 2). Null for other stores.
  const pgCpu0 = cfg.target.pgUrl ? await postgresServerCpuMs() : null;
  const t0 = wallNow();
  for (const c of kids) c.send({ type: "go" });
  let deadlineTimer;
  const timedOut = !(await Promise.race([allDonePromise, new Promise((r) => (deadlineTimer = setTimeout(() => r(false), deadlineMs)))]));
  clearTimeout(deadlineTimer);
  let t1 = Math.max(...latest.map((x) => x.at));
  const pgCpuMs = pgCpu0 === null ? null : (await postgresServerCpuMs()) - pgCpu0;
  let settleMs = 0;
  if (!timedOut && !completionIsStored) {
    kids[0].send({ type: "settle" });
    const settled = await awaitMessage(kids[0], "settled", 20_000);
    settleMs = settled.at - t1;
    t1 = settled.at ?? t1;
  }
  for (const c of kids) c.send({ type: "stop" });
  const done = latest.reduce((s, x) => s + x.done, 0);
  let stopTimer;
  const per = await Promise.race([Promise.all(results), new Promise((r) => (stopTimer = setTimeout(() => r(null), STOP_TIMEOUT_MS)))]);
  clearTimeout(stopTimer);
  const where = `${done} of ${cfg.n} done${timedOut ? ` when the ${deadlineMs} ms deadline hit` : ""}`;
  if (!per) {
    for (const c of kids) c.kill("SIGKILL");
    return { error: `workers did not stop within ${STOP_TIMEOUT_MS} ms (${where})` };
  }
  const failed = per.find((r) => r.error);
  if (failed) return { ...failed, error: `${failed.error} (${where})` };
  return {
    elapsedMs: t1 - t0,
    /** The database server's CPU per 1,000 jobs in ms (PostgreSQL only; up to the last completion). */
    dbCpuMsPer1000: pgCpuMs === null || timedOut ? null : (pgCpuMs / cfg.n) * 1000,
    jobsPerSec: timedOut ? NaN : cfg.n / ((t1 - t0) / 1000),
    timedOut,
    done,
    settleMs,
    perProcess: per.map((r) => ({ handled: r.handled, done: r.done })),
    stored: per[0].stored,
    settings: per[0].settings,
    peakRssMb: Math.max(...per.map((r) => r.peakRssMb)),
    errors: per.flatMap((r) => r.errors ?? []),
    errorCount: per.reduce((s, r) => s + (r.errorCount ?? 0), 0),
  };
}
