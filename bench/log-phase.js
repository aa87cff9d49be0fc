// One phase of bench/log.js in a process of its own: later's retained log
// (target { file } or { pgUrl }) or Redis Streams (target { redis }).
//
// argv[2]: JSON { phase, target, size, ... }. One-shot phases report one
// { ok, result } message over IPC and exit:
//   append-single  10 loops, each awaiting one append (XADD) at a time, for `seconds`
//   append-batch   `n` records in calls of `batch` (appendMany; a pipeline of XADDs), one after another
//   replay         every partition read from offset 0 in pages of `page` (XRANGE … COUNT page): a first pass untimed, then
//                  passes timed until 500 ms have been (at least 3); the second pass alone is reported too
// Phase "member" is one member of the consumer group, driven by the orchestrator:
//   -> {type:"ready"}
//   <- {type:"tick"}    -> {type:"assigned", assigned}   (log: while the group settles)
//   <- {type:"reroll"}  -> {type:"rerolled", memberId}             (log: leave and join again as a new member)
//   <- {type:"go"}      -> {type:"progress", handled, at} (coalesced; `at` = wall time of the last commit/ack seen)
//   <- {type:"settle"}  -> {type:"settled", at}          (log: polls lag until the group has committed everything)
//   <- {type:"stop"}    -> { ok, result }                (then exits)
import { logTopic, RetainedLog } from "@later/runtime";
import { postgres } from "@later/runtime/postgres";
import { sqlite } from "@later/runtime/sqlite";
import { Redis } from "ioredis";
import { NAMESPACE, peakRssMb, wallNow, reportPhase } from "./lib.js";
import { recordValue } from "./record-bytes.js";

const cfg = JSON.parse(process.argv[2]);
const errors = [];
const TOPIC = "bench-log";
const GROUP = "bench-group";
/** Replay: timed passes go on until this much time has been timed, and at least MIN_TIMED_PASSES ran. */
const REPLAY_TIMED_MS = 500;
const MIN_TIMED_PASSES = 3;
/** The members' poll interval: a sleep of exactly this long is "parked" by `benchClock` until the orchestrator wakes it. */
const PARKED_MS = 3_600_000;

const parked = new Set();
/**
 * The members' clock: the wall clock, except that the consume loop's idle
 * sleep (`pollIntervalMs` = PARKED_MS) lasts until `wakeAll()`. So members
 * join and settle on an empty log, stay idle (heartbeats and lease renewals
 * go on, on wall time) while the log is filled, and start together on "go".
 */
const benchClock = {
  now: () => Date.now(),
  sleep: (ms, signal) =>
    new Promise((resolve) => {
      if (signal?.aborted) return resolve();
      const done = () => {
        clearTimeout(timer);
        parked.delete(done);
        signal?.removeEventListener("abort", done);
        resolve();
      };
      const timer = ms === PARKED_MS ? undefined : setTimeout(done, Math.max(0, ms));
      if (ms === PARKED_MS) parked.add(done);
      signal?.addEventListener("abort", done, { once: true });
    }),
};
const wakeAll = () => {
  for (const done of [...parked]) done();
};

function openLog(clock) {
  const { target } = cfg;
  const backend = target.file ? sqlite({ file: target.file, namespace: NAMESPACE }) : postgres({ connectionString: target.pgUrl, namespace: NAMESPACE });
  return RetainedLog.open({
    backend,
    topics: [logTopic(TOPIC, cfg.partitions)],
    autoMigrate: true,
    retention: false,
    ...(clock ? { clock } : {}),
    onEvent: (e) => {
      if (e.type === "error") errors.push(`${e.where}: ${e.error}`);
    },
  });
}

function openRedis() {
  const { host, port, db } = cfg.target.redis;
  return new Redis({ host, port, db, lazyConnect: true, maxRetriesPerRequest: 1 });
}

/** The stream key of this run (one stream; Redis Streams have no partitions). */
const streamKey = () => `${cfg.target.redis.prefix}:stream`;

function onMessage(type) {
  return new Promise((resolve) => process.on("message", (m) => m?.type === type && resolve(m)));
}

async function appendSingle() {
  let count = 0;
  let body;
  let close;
  if (cfg.target.redis) {
    const redis = openRedis();
    await redis.connect();
    const key = streamKey();
    body = (i) => redis.xadd(key, "*", "v", recordValue(cfg.size, i));
    close = () => redis.quit();
  } else {
    const log = await openLog();
    body = (i) => log.append(TOPIC, { partition: i % cfg.partitions, value: recordValue(cfg.size, i) });
    close = () => log.close();
  }
  const t0 = wallNow();
  const until = t0 + cfg.seconds * 1000;
  const loop = async () => {
    while (wallNow() < until) await body(count++);
  };
  await Promise.all(Array.from({ length: cfg.inFlight }, loop));
  const elapsedMs = wallNow() - t0;
  await close();
  return { records: count, elapsedMs, recPerSec: count / (elapsedMs / 1000) };
}

async function appendBatch() {
  let call;
  let close;
  if (cfg.target.redis) {
    const redis = openRedis();
    await redis.connect();
    const key = streamKey();
    call = async (from, to) => {
      const p = redis.pipeline();
      for (let i = from; i < to; i++) p.xadd(key, "*", "v", recordValue(cfg.size, i));
      for (const [error] of await p.exec()) if (error) throw error;
    };
    close = () => redis.quit();
  } else {
    const log = await openLog();
    call = (from, to) =>
      log.appendMany(
        TOPIC,
        Array.from({ length: to - from }, (_, k) => ({ partition: (from + k) % cfg.partitions, value: recordValue(cfg.size, from + k) })),
      );
    close = () => log.close();
  }
  const t0 = wallNow();
  for (let i = 0; i < cfg.n; i += cfg.batch) await call(i, Math.min(cfg.n, i + cfg.batch));
  const elapsedMs = wallNow() - t0;
  await close();
  return { records: cfg.n, elapsedMs, recPerSec: cfg.n / (elapsedMs / 1000) };
}

/**
 * Reads everything twice and times the second pass: the first warms the JIT
 * and the page cache (the same for every system), so the figure is the
 * steady rate a consumer catching up sees, not a cold process's first page.
 */
async function replay() {
  let readAll;
  let close;
  if (cfg.target.redis) {
    const redis = openRedis();
    await redis.connect();
    const key = streamKey();
    readAll = async () => {
      let records = 0;
      let bytes = 0;
      let start = "-";
      for (;;) {
        const page = await redis.xrangeBuffer(key, start, "+", "COUNT", cfg.page);
        for (const [, fields] of page) bytes += fields[1].length;
        records += page.length;
        if (page.length < cfg.page) break;
        start = `(${page.at(-1)[0].toString()}`;
      }
      return { records, bytes };
    };
    close = () => redis.quit();
  } else {
    const log = await openLog();
    readAll = async () => {
      let records = 0;
      let bytes = 0;
      for (let partition = 0; partition < cfg.partitions; partition++) {
        let from = 0;
        for (;;) {
          const page = await log.read({ topic: TOPIC, partition, fromOffset: from, limit: cfg.page });
          for (const r of page) bytes += r.value.byteLength;
          records += page.length;
          if (page.length < cfg.page) break;
          from = page.at(-1).offset + 1;
        }
      }
      return { records, bytes };
    };
    close = () => log.close();
  }
  // The first pass warms the page cache and the code; then passes are timed until REPLAY_TIMED_MS
  // have been (at least MIN_TIMED_PASSES). One pass of 50,000 records of 100 B reads 5 MB in about
  // 50 ms, a window in which V8's compiler tiers decide the figure: in a fresh process the second
  // pass ran at 75-98 MB/s, the third at 128-250. The second pass alone is reported beside it.
  await readAll();
  let records = 0;
  let bytes = 0;
  let elapsedMs = 0;
  let secondPass = null;
  for (let pass = 0; pass < MIN_TIMED_PASSES || elapsedMs < REPLAY_TIMED_MS; pass++) {
    const t0 = wallNow();
    const one = await readAll();
    const ms = wallNow() - t0;
    secondPass ??= { records: one.records, bytes: one.bytes, elapsedMs: ms, mbPerSec: one.bytes / 1e6 / (ms / 1000) };
    records += one.records;
    bytes += one.bytes;
    elapsedMs += ms;
  }
  await close();
  return { records, bytes, elapsedMs, recPerSec: records / (elapsedMs / 1000), mbPerSec: bytes / 1e6 / (elapsedMs / 1000), secondPass };
}

/** Counts what the member handled and reports it to the orchestrator, coalesced (one message per 5 ms at most). */
function progressReporter() {
  const state = { handled: 0, at: 0 };
  let _timer = null;
  const flush = () => {
    _timer = null;
    process.send({ type: "progress", handled: state.handled, at: state.at });
  };
  return {
    state,
    add(k) {
      state.handled += k;
      state.at = wallNow();
      _timer ??= setTimeout(flush, 5);
    },
  };
}

async function logMember() {
  const log = await openLog(benchClock);
  const progress = progressReporter();
  let counting = false;
  const join = () =>
    log.consume({
      topic: TOPIC,
      group: GROUP,
      maxBatch: cfg.maxBatch,
      pollIntervalMs: PARKED_MS,
      // No-op: the figure is reading a batch and committing it. The commit follows the handler; "settle" waits for the last one.
      handler: ({ records }) => {
        if (counting) progress.add(records.length);
      },
    });
  let consumer = await join();
  const stopRequested = onMessage("stop");
  process.on("message", async (m) => {
    if (m?.type === "tick") {
      wakeAll();
      process.send({ type: "assigned", assigned: consumer.assigned() });
    } else if (m?.type === "reroll") {
      await consumer.stop();
      consumer = await join();
      process.send({ type: "rerolled", memberId: consumer.memberId });
    } else if (m?.type === "go") {
      counting = true;
      wakeAll();
    } else if (m?.type === "settle") {
      const until = wallNow() + 15_000;
      for (;;) {
        const lag = await log.lag({ topic: TOPIC, group: GROUP });
        if (lag.every((p) => p.lag === 0) || wallNow() > until) break;
        await new Promise((r) => setTimeout(r, 2));
      }
      process.send({ type: "settled", at: wallNow() });
    }
  });
  process.send({ type: "ready", memberId: consumer.memberId });
  await stopRequested;
  const assigned = consumer.assigned();
  await log.close();
  return { handled: progress.state.handled, assigned, peakRssMb: peakRssMb() };
}

/** XREADGROUP (COUNT maxBatch, no BLOCK) then XACK of the ids read, until a read returns nothing: the stream was filled before "go". */
async function redisMember() {
  const redis = openRedis();
  await redis.connect();
  const key = streamKey();
  const progress = progressReporter();
  const stopRequested = onMessage("stop");
  const go = onMessage("go");
  process.send({ type: "ready" });
  await go;
  for (;;) {
    const reply = await redis.xreadgroupBuffer("GROUP", GROUP, cfg.name, "COUNT", cfg.maxBatch, "STREAMS", key, ">");
    const entries = reply?.[0]?.[1] ?? [];
    if (entries.length === 0) break;
    await redis.xack(key, GROUP, ...entries.map(([id]) => id));
    progress.add(entries.length);
  }
  await stopRequested;
  await redis.quit();
  return { handled: progress.state.handled, peakRssMb: peakRssMb() };
}

const phases = {
  "append-single": appendSingle,
  "append-batch": appendBatch,
  replay,
  member: () => (cfg.target.redis ? redisMember() : logMember()),
};

await reportPhase(phases[cfg.phase], errors);
