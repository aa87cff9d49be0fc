// Enqueues (and claims) "work" jobs from its own process, for priority-unique.test.ts.
//
// argv[2] is a JSON config: { backend, namespace, name, mode, rounds, key }. Prints `ready` once
// its backend is open, then waits for `go` on stdin, so the children start at once.
// - mode "mixed": `rounds` times, enqueues 4 jobs of random priorities (−3..3), printing
//   `enq <id> <priority> <epochMs after the commit>` for each, then claims up to 3 ready jobs
//   directly (`backend.jobs.claimReady`), printing `claim <now> <epochMs after> <id,id,...>`.
// - mode "unique": `rounds` enqueues with uniqueKey `key` (keep), all at once, printing
//   `unique <id> <outcome>` for each.
// Prints `done` and exits; `error <message>` on any failure.
import { createInterface } from "node:readline";
import { JobPublisher } from "@later/runtime";
import { prepareBackend } from "@later/runtime/internal";
import { childBackend } from "./child-backend.mjs";

const config = JSON.parse(process.argv[2]);
const say = (line) => process.stdout.write(`${line}\n`);

const backend = childBackend(config);

async function main() {
  await prepareBackend(backend, false);
  const publisher = new JobPublisher({
    backend,
    clock: { now: () => Date.now(), sleep: (ms) => new Promise((r) => setTimeout(r, ms)) },
    defaultRetryPolicy: null,
    encoders: new Map([["work", (p) => JSON.stringify(p)]]),
    topics: new Map(),
    retentionMs: 60_000,
    onCommitted: () => {},
  });
  say("ready");
  await new Promise((resolve) => createInterface({ input: process.stdin }).on("line", (l) => l === "go" && resolve()));
  if (config.mode === "unique") {
    const results = await Promise.all(
      Array.from({ length: config.rounds }, (_, i) => publisher.enqueueUnique("work", { from: config.name, i }, { uniqueKey: config.key })),
    );
    for (const r of results) say(`unique ${r.id} ${r.outcome}`);
  } else {
    for (let round = 0; round < config.rounds; round++) {
      for (let k = 0; k < 4; k++) {
        const priority = Math.floor(Math.random() * 7) - 3;
        const id = await publisher.enqueue("work", { from: config.name }, { priority });
        say(`enq ${id} ${priority} ${Date.now()}`);
      }
      const now = Date.now();
      const claimed = await backend.jobs.claimReady({ owner: config.name, limit: 3, now, leaseExpiresAt: now + 600_000, jobTypes: ["work"] });
      say(`claim ${now} ${Date.now()} ${claimed.jobs.map((j) => j.id).join(",")}`);
    }
  }
  say("done");
}

main()
  .catch((error) => say(`error ${error?.stack ?? error}`))
  .finally(() => backend.close().then(() => process.exit(0)));
