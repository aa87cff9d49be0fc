/**
 * The publisher's group commit (`InsertCoalescer`), its batching rules on
 * their own: which callers share an insert, what each caller gets back, and
 * how a failed batch is answered. The inserts here are scripted functions;
 * the same path against real databases is in
 * test/conformance/enqueue-coalescing.test.ts.
 */
import { describe, expect, it } from "vitest";
import { InsertCoalescer } from "../../packages/runtime/src/publisher/insert-coalescer.js";
import type { JobInsert } from "../../packages/runtime/src/backend/backend.js";
import type { JobStage } from "../../packages/runtime/src/core/job-stage.js";
import { DatabaseBusyError, InvalidArgumentError } from "../../packages/runtime/src/errors.js";

const job = (id: string): JobInsert => ({ id, jobType: "t", payload: "{}", runAt: 0, retryPolicy: null });

/** An insert that records each batch's ids and `now`, and answers `enqueued` for each job after one macrotask. */
function recorder(fail?: (ids: string[]) => Error | null) {
  const batches: { ids: string[]; now: number }[] = [];
  const insert = async (jobs: JobInsert[], now: number): Promise<JobStage[]> => {
    const ids = jobs.map((j) => j.id);
    batches.push({ ids, now });
    await new Promise((r) => setImmediate(r));
    const error = fail?.(ids) ?? null;
    if (error) throw error;
    return jobs.map(() => "enqueued");
  };
  return { batches, insert };
}

describe("InsertCoalescer", () => {
  it("writes the callers of one tick in one insert, with the latest now, and gives each its own stages", async () => {
    const r = recorder();
    const c = new InsertCoalescer(r.insert);
    const results = await Promise.all([c.add([job("a")], 5), c.add([job("b"), job("c")], 7), c.add([job("d")], 6)]);
    expect(r.batches).toEqual([{ ids: ["a", "b", "c", "d"], now: 7 }]);
    expect(results).toEqual([["enqueued"], ["enqueued", "enqueued"], ["enqueued"]]);
  });

  it("a lone caller is written alone at once; callers arriving while an insert runs go together in the next", async () => {
    const r = recorder();
    const c = new InsertCoalescer(r.insert);
    const first = c.add([job("a")], 1);
    await Promise.resolve();
    await Promise.resolve();
    expect(r.batches.map((b) => b.ids)).toEqual([["a"]]); // running now
    const later = [c.add([job("b")], 2), c.add([job("c")], 3)];
    await Promise.all([first, ...later]);
    expect(r.batches.map((b) => b.ids)).toEqual([["a"], ["b", "c"]]);
  });

  it("never puts more than maxJobs in one insert, and never splits a caller's jobs", async () => {
    const r = recorder();
    const c = new InsertCoalescer(r.insert, 3);
    await Promise.all([
      c.add([job("a"), job("b")], 1),
      c.add([job("c"), job("d")], 1),
      c.add([job("e")], 1),
      c.add([job("f"), job("g"), job("h"), job("i")], 1),
    ]);
    expect(r.batches.map((b) => b.ids)).toEqual([
      ["a", "b"],
      ["c", "d", "e"],
      ["f", "g", "h", "i"],
    ]);
  });

  it("a batch refused for one caller's row is written again caller by caller: only that caller fails", async () => {
    const r = recorder((ids) => (ids.includes("bad") ? new InvalidArgumentError("row refused") : null));
    const c = new InsertCoalescer(r.insert);
    const results = await Promise.allSettled([c.add([job("a")], 1), c.add([job("bad")], 1), c.add([job("c")], 1)]);
    expect(results.map((x) => x.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((results[1] as PromiseRejectedResult).reason).toBeInstanceOf(InvalidArgumentError);
    expect(r.batches.map((b) => b.ids)).toEqual([["a", "bad", "c"], ["a"], ["bad"], ["c"]]);
  });

  it("a batch that fails for the whole database fails every caller with that error, without writing each again", async () => {
    let busy = true;
    const r = recorder(() => (busy ? new DatabaseBusyError("locked") : null));
    const c = new InsertCoalescer(r.insert);
    const results = await Promise.allSettled([c.add([job("a")], 1), c.add([job("b")], 1)]);
    expect(results.map((x) => (x as PromiseRejectedResult).reason?.code)).toEqual(["DATABASE_BUSY", "DATABASE_BUSY"]);
    expect(r.batches).toHaveLength(1);
    // And it goes on: once the database answers again, the next callers are written.
    busy = false;
    await expect(Promise.all([c.add([job("y")], 2), c.add([job("z")], 2)])).resolves.toEqual([["enqueued"], ["enqueued"]]);
    expect(r.batches.map((b) => b.ids)).toEqual([
      ["a", "b"],
      ["y", "z"],
    ]);
  });
});
