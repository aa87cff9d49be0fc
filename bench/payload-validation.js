// What the run-time payload check costs: single enqueues on SQLite through the
// quickstart's generated module (examples/quickstart/dist, built by `pnpm
// build`), whose catalog carries each payload's shape, beside the same typed
// publisher opened on the same catalog without the shapes (a catalog entry
// without `payload` checks nothing: the only difference between the two).
// Run: `pnpm build && node bench/payload-validation.js` (BENCH_JOBS, BENCH_PAIRS).
//
// * Both publishers are open at once, each on its own fresh SQLite file, and
//   warmed up with N/4 calls. A run times N awaited `enqueue` calls of two job
//   types (an object of two strings, and one with a Date) on one of them.
// * Runs come in pairs, checked and unchecked back to back, the order
//   alternating from pair to pair, so drift of a shared machine (other load,
//   the files growing) falls on both sides alike.
// * Printed: jobs/s of every run, then the median of the pairs' own ratios
//   and the ratio of the totals (checked ÷ unchecked; 1.00 means the check
//   costs nothing measurable).
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { TypedJobPublisher } from "@later/runtime";
import { sqlite } from "@later/runtime/sqlite";
import { openJobsPublisher } from "../examples/quickstart/dist/jobs.generated.js";

const N = Math.max(100, Number.parseInt(process.env.BENCH_JOBS ?? "2000", 10) || 2000);
const PAIRS = Math.max(1, Number.parseInt(process.env.BENCH_PAIRS ?? "15", 10) || 15);

/** The quickstart's catalog as later-gen writes it, less the shapes. */
const UNCHECKED = {
  sendEmail: { handlerMethod: "withSendEmailHandler" },
  chainStep: { handlerMethod: "withChainStepHandler" },
  chargeCard: { handlerMethod: "withChargeCardHandler", datePaths: [["requestedAt"]] },
  postEntry: { handlerMethod: "withPostEntryHandler", topic: "ledger", partitionKey: "accountId", partitions: 4 },
};

const tmp = mkdtempSync(path.join(os.tmpdir(), "later-bench-validation-"));

/** Opens a publisher on a fresh file (`checked`: the generated module's own) and warms it up. */
async function open(checked) {
  const backend = sqlite({ file: path.join(tmp, `jobs-${checked ? "checked" : "unchecked"}.db`), namespace: "bench" });
  const options = { backend, autoMigrate: true };
  const publisher = checked ? await openJobsPublisher(options) : await TypedJobPublisher.open(options, UNCHECKED);
  await run(publisher, N / 4);
  return publisher;
}

/** Jobs per second of `count` single enqueues through `publisher`. */
async function run(publisher, count) {
  const start = process.hrtime.bigint();
  for (let i = 0; i < count; i++) {
    if (i % 2 === 0) await publisher.jobs.sendEmail.enqueue({ address: `user${i}@example.com`, body: "Welcome aboard" });
    else await publisher.jobs.chargeCard.enqueue({ amount: i, requestedAt: new Date() });
  }
  return count / (Number(process.hrtime.bigint() - start) / 1e9);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const publishers = { checked: await open(true), unchecked: await open(false) };
try {
  const on = [];
  const off = [];
  for (let pair = 0; pair < PAIRS; pair++) {
    const order = pair % 2 === 0 ? [true, false] : [false, true];
    for (const checked of order) (checked ? on : off).push(await run(checked ? publishers.checked : publishers.unchecked, N));
    console.log(`pair ${pair + 1}: checked ${on.at(-1).toFixed(0)} jobs/s, unchecked ${off.at(-1).toFixed(0)} jobs/s`);
  }
  const pairRatio = median(on.map((x, i) => x / off[i]));
  const totals = on.reduce((t, x) => t + N / x, 0);
  const totalsOff = off.reduce((t, x) => t + N / x, 0);
  console.log(`single enqueues on SQLite, ${N} per run, ${PAIRS} pairs`);
  console.log(
    `median of the pairs' ratios ${pairRatio.toFixed(3)}, ratio of the totals ${(totalsOff / totals).toFixed(3)} (checked ÷ unchecked; target >= 0.90)`,
  );
} finally {
  await publishers.checked.close();
  await publishers.unchecked.close();
  rmSync(tmp, { recursive: true, force: true });
}
