// What a claim costs behind a backlog it does not take: a server's claim of
// its own job type while the namespace holds a backlog of another type (one
// the server has no handler for, a paused type, or a limited type at its
// limit: the claim excludes it the same way, by `job_type` in its filter).
// The ready index is (namespace, priority, run_at) on both backends, so the
// claim reads the other type's ready rows ahead of its own and skips them.
//
// For each backend and backlog size: B jobs of type "other" enqueued first,
// then 2,000 of type "noop"; then 5 claims of 100 "noop" jobs through the
// seam (`jobs.claimReady`), each timed; the median is printed. A fresh SQLite
// file or PostgreSQL database per size. Run: `node bench/claim-behind.js`
// (after `pnpm build`). Env: BENCH_BACKLOGS ("0,10000,100000"),
// BENCH_ONLY ("sqlite,postgres"), BENCH_PG_URL.
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { JobPublisher, RetryPolicy, systemClock } from "@later/runtime";
import { postgres } from "@later/runtime/postgres";
import { sqlite } from "@later/runtime/sqlite";
import { benchPublisher, NAMESPACE } from "./lib.js";
import { BenchDatabases } from "./pg-databases.js";
import { markdownTable, median } from "./report.js";

const BACKLOGS = (process.env.BENCH_BACKLOGS ?? "0,10000,100000").split(",").map(Number);
const ONLY = (process.env.BENCH_ONLY ?? "sqlite,postgres").split(",");
const dbs = new BenchDatabases(process.env.BENCH_PG_URL ?? "postgres://postgres@127.0.0.1:5432/postgres");
const dir = mkdtempSync(join(tmpdir(), "later-bench-behind-"));
process.on("exit", () => rmSync(dir, { recursive: true, force: true }));

/** Median ms of 5 claims of 100 "noop" jobs behind `backlog` ready jobs of "other". */
async function claimBehind(kind, backlog) {
  let dispose = async () => {};
  let backend;
  if (kind === "sqlite") backend = sqlite({ file: join(dir, `behind-${backlog}.db`), namespace: NAMESPACE });
  else {
    const { name, url } = await dbs.create("behind");
    backend = postgres({ connectionString: url, namespace: NAMESPACE });
    dispose = () => dbs.drop(name);
  }
  try {
    await backend.open();
    await backend.migrations.up();
    const encoders = new Map([
      ["noop", JSON.stringify],
      ["other", JSON.stringify],
    ]);
    const publisher = benchPublisher({ JobPublisher, RetryPolicy, systemClock }, backend, { encoders });
    for (let k = 0; k < backlog; k += 1000)
      await publisher.enqueueMany(
        "other",
        Array.from({ length: Math.min(1000, backlog - k) }, (_, i) => ({ i })),
      );
    await publisher.enqueueMany(
      "noop",
      Array.from({ length: 2000 }, (_, i) => ({ i })),
    );
    const ms = [];
    for (let r = 0; r < 5; r++) {
      const now = Date.now();
      const t0 = performance.now();
      const { jobs } = await backend.jobs.claimReady({ owner: "bench", limit: 100, now, leaseExpiresAt: now + 60_000, jobTypes: ["noop"] });
      ms.push(performance.now() - t0);
      if (jobs.length === 0) throw new Error(`${kind}: the claim found no job`);
    }
    return median(ms);
  } finally {
    await backend.close();
    await dispose();
  }
}

const rows = [];
for (const kind of ONLY) {
  for (const backlog of BACKLOGS) {
    const ms = await claimBehind(kind, backlog);
    console.error(`  ${kind}, ${backlog} jobs of another type ahead: ${ms.toFixed(2)} ms a claim`);
    rows.push([kind, backlog.toLocaleString("en-US"), ms.toFixed(2)]);
  }
}
console.log(markdownTable(["backend", "ready jobs of another type ahead", "claim of 100 (ms, median of 5)"], rows));
