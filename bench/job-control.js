// What the job-control features cost when used (issue 27, point 9), on both
// backends, in one process, phases alternating so that drift on the machine
// falls on both sides of each pair:
//
// - processing with every job given a random priority (-100..100) against
//   the same jobs with none (target: at least 95%);
// - single enqueue with a unique key (one key per job, `keep`) against plain
//   single enqueue, 10 in flight each (target: at least 80%), in two pairs:
//   each enqueue written alone (`coalesce: false`, one transaction each, the
//   path every enqueue took when the target was set), and as users get them,
//   concurrent enqueues written together (J15: plain ones in one statement,
//   unique ones in one transaction).
//
// On PostgreSQL each processing run starts after a CHECKPOINT (so that no
// run pays for the WAL its prefill wrote), and the table adds the server's
// CPU per job (every postgres process of this machine, from /proc): both
// sides of a pair are CPU-bound on a small machine, and that figure varies
// far less from run to run than the rate does.
//
// Each phase gets a fresh SQLite file or a fresh PostgreSQL database. Run:
// `pnpm bench:job-control`. Env: BENCH_JOBS (100000: processing),
// BENCH_SINGLE_JOBS (20000: single enqueues; 5000 for PostgreSQL's each
// written alone, which run a few thousand a second), BENCH_REPS (5),
// BENCH_PG_URL, BENCH_ONLY (sqlite,postgres). Shorter runs (20,000 jobs
// processed in a third of a second) spread their pairs from 0.6 to 1.3.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { BackgroundJobServer, JobPublisher, RetryPolicy, systemClock } from "@later/runtime";
import { postgres } from "@later/runtime/postgres";
import { sqlite } from "@later/runtime/sqlite";
import { benchPublisher, JOB_TYPE, NAMESPACE, wallNow } from "./lib.js";
import { BenchDatabases, queryOnce } from "./pg-databases.js";
import { postgresServerCpuMs } from "./statement-meter.js";
import { int, markdownTable, median } from "./report.js";

const N = Math.max(100, Number.parseInt(process.env.BENCH_JOBS ?? "", 10) || 100_000);
const SINGLE_JOBS = Math.max(100, Number.parseInt(process.env.BENCH_SINGLE_JOBS ?? "", 10) || 20_000);
/** Single enqueues per phase: PostgreSQL's written alone take a round trip and a commit each. */
const singleJobs = (kind, mode) => (kind === "postgres" && (mode === "alone" || mode === "uniqueAlone") ? Math.min(SINGLE_JOBS, 5000) : SINGLE_JOBS);
const REPS = Math.max(1, Number.parseInt(process.env.BENCH_REPS ?? "", 10) || 5);
const ONLY = (process.env.BENCH_ONLY ?? "sqlite,postgres").split(",");
const dbs = new BenchDatabases(process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres");
const dir = mkdtempSync(join(tmpdir(), "later-bench-control-"));
process.on("exit", () => rmSync(dir, { recursive: true, force: true }));
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => dbs.dropAll().finally(() => process.exit(130)));

let fileSeq = 0;
/** A fresh store of `kind`: a factory of backends on it, and its disposal. */
async function freshStore(kind, label) {
  if (kind === "sqlite") {
    const file = join(dir, `${label}-${++fileSeq}.db`);
    return { backend: () => sqlite({ file, namespace: NAMESPACE }), dispose: async () => {} };
  }
  const { name, url } = await dbs.create(label);
  return { url, backend: () => postgres({ connectionString: url, namespace: NAMESPACE }), dispose: () => dbs.drop(name) };
}

const publisherOn = (backend, coalesce = true) => benchPublisher({ JobPublisher, RetryPolicy, systemClock }, backend, { coalesce });

/**
 * Processing N prefilled jobs (bulk enqueue, `priority` of job i from `priorityOf`) with one server of 10 workers:
 * `{ rate }` in jobs per second and, on PostgreSQL, `cpuUs`: the server's CPU per job in µs (null on SQLite).
 */
async function processing(kind, priorityOf) {
  const store = await freshStore(kind, "control_proc");
  try {
    const backend = store.backend();
    await backend.open();
    await backend.migrations.up();
    const publisher = publisherOn(backend);
    for (let k = 0; k < N; k += 1000) {
      const count = Math.min(1000, N - k);
      if (priorityOf === null)
        await publisher.enqueueMany(
          JOB_TYPE,
          Array.from({ length: count }, (_, i) => ({ i: k + i })),
        );
      // One enqueueMany per priority value in the slice (the option is per call).
      else {
        const byPriority = new Map();
        for (let i = 0; i < count; i++) {
          const p = priorityOf(k + i);
          byPriority.set(p, [...(byPriority.get(p) ?? []), { i: k + i }]);
        }
        for (const [priority, payloads] of byPriority) await publisher.enqueueMany(JOB_TYPE, payloads, { priority });
      }
    }
    await backend.close();
    if (store.url) await queryOnce(store.url, "CHECKPOINT");
    let done = 0;
    let finished;
    const all = new Promise((r) => (finished = r));
    const cpu0 = store.url ? await postgresServerCpuMs() : null;
    const t0 = wallNow();
    const server = await BackgroundJobServer.start({
      context: {},
      backend: store.backend(),
      workerCount: 10,
      handlers: { [JOB_TYPE]: { handle: async () => {} } },
      onEvent: (e) => {
        if (e.type === "job" && e.stage === "success" && ++done === N) finished();
      },
    });
    await all;
    const rate = (N / (wallNow() - t0)) * 1000;
    const cpuUs = cpu0 === null ? null : (((await postgresServerCpuMs()) - cpu0) * 1000) / N;
    await server.shutdown({ deadlineMs: 5000 });
    return { rate, cpuUs };
  } finally {
    await store.dispose();
  }
}

/**
 * Jobs per second of `singleJobs(kind, mode)` single enqueues, 10 in flight; `mode`: "plain", "alone" (plain, not coalesced),
 * "unique" (each with its own key, concurrent ones written together), "uniqueAlone" (the same, each written alone).
 */
async function singleEnqueue(kind, mode) {
  const unique = mode === "unique" || mode === "uniqueAlone";
  const store = await freshStore(kind, "control_single");
  try {
    const backend = store.backend();
    await backend.open();
    await backend.migrations.up();
    const publisher = publisherOn(backend, mode === "plain" || mode === "unique");
    const n = singleJobs(kind, mode);
    let next = 0;
    const t0 = wallNow();
    await Promise.all(
      Array.from({ length: 10 }, async () => {
        while (next < n) {
          const i = next++;
          if (unique) await publisher.enqueueUnique(JOB_TYPE, { i }, { uniqueKey: `k${i}` });
          else await publisher.enqueue(JOB_TYPE, { i });
        }
      }),
    );
    const rate = (n / (wallNow() - t0)) * 1000;
    await backend.close();
    return rate;
  } finally {
    await store.dispose();
  }
}

/** A deterministic spread of priorities over -100..100. */
const randomPriority = (i) => ((i * 7919) % 201) - 100;

const rows = [];
for (const kind of ["sqlite", "postgres"].filter((k) => ONLY.includes(k))) {
  const pairs = { proc: [], cpu: [], single: [], coalesced: [] };
  for (let r = 0; r < REPS; r++) {
    // Alternate which side of a pair runs first.
    const first = r % 2 === 0;
    const plainProc = first ? await processing(kind, null) : null;
    const prioProc = await processing(kind, randomPriority);
    const proc = [plainProc ?? (await processing(kind, null)), prioProc];
    pairs.proc.push(proc.map((p) => p.rate));
    if (kind === "postgres") pairs.cpu.push(proc.map((p) => p.cpuUs));
    const aloneSingle = first ? await singleEnqueue(kind, "alone") : null;
    const uniqueAlone = await singleEnqueue(kind, "uniqueAlone");
    pairs.single.push([aloneSingle ?? (await singleEnqueue(kind, "alone")), uniqueAlone]);
    const plainSingle = first ? await singleEnqueue(kind, "plain") : null;
    const uniqueSingle = await singleEnqueue(kind, "unique");
    pairs.coalesced.push([plainSingle ?? (await singleEnqueue(kind, "plain")), uniqueSingle]);
    console.error(`${kind} rep ${r + 1}/${REPS} done`);
  }
  const summary = (ps, target, what) => {
    const ratios = ps.map(([a, b]) => b / a);
    return [
      what,
      int(median(ps.map((p) => p[0]))),
      int(median(ps.map((p) => p[1]))),
      `${median(ratios).toFixed(3)} (${Math.min(...ratios).toFixed(2)}–${Math.max(...ratios).toFixed(2)})`,
      target,
    ];
  };
  rows.push([`**${kind}**`, "", "", "", ""]);
  rows.push(summary(pairs.proc, "≥ 0.95", `processing, ${int(N)} jobs, 10 workers: none vs random priority`));
  if (pairs.cpu.length > 0) {
    // The server's CPU per job as jobs per CPU-second, so that its ratio reads as the rate's does (with ÷ without).
    const ratio = summary(
      pairs.cpu.map((p) => p.map((us) => 1e6 / us)),
      "–",
      "",
    )[3];
    const us = (i) => median(pairs.cpu.map((p) => p[i])).toFixed(1);
    rows.push(["the same, PostgreSQL's CPU per job (µs; ratio of jobs per CPU-second)", us(0), us(1), ratio, "–"]);
  }
  rows.push(summary(pairs.single, "≥ 0.80", `single enqueue, ${int(singleJobs(kind, "alone"))} jobs, 10 in flight, each written alone: plain vs unique key`));
  rows.push(
    summary(
      pairs.coalesced,
      "≥ 0.80",
      `single enqueue, ${int(singleJobs(kind, "plain"))} jobs, 10 in flight, written together (J15, as users get them): plain vs unique key`,
    ),
  );
}
console.log(`\nJob control cost, ${REPS} pairs (jobs/s medians; ratio = with ÷ without, median of the pairs and their range)\n`);
console.log(markdownTable(["figure", "without", "with", "ratio", "target"], rows));
await dbs.dropAll();
