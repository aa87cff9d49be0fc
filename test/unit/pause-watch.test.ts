/**
 * PauseWatch (X4): a pause or resume of this process (`invalidate`) made
 * while a read of the paused set is in flight is never answered by that
 * read (it began before the change); the next refresh reads again.
 */
import { describe, expect, it } from "vitest";
import type { Backend } from "../../packages/runtime/src/backend/backend.js";
import { PauseWatch } from "../../packages/runtime/src/worker/pause-watch.js";

type Entry = { kind: "type" | "topic"; name: string };

describe("PauseWatch (X4)", () => {
  it("a refresh after invalidate() waits for a read that began after it, not the one in flight", async () => {
    const answers: ((list: Entry[]) => void)[] = [];
    const backend = { control: { pausedList: () => new Promise<Entry[]>((resolve) => answers.push(resolve)) } } as unknown as Backend;
    const watch = new PauseWatch(backend, { now: () => 0 } as never, 1_000, (error) => {
      throw error;
    });
    const first = watch.refresh();
    expect(answers).toHaveLength(1);
    watch.invalidate(); // a pause committed while the first read is in flight
    const second = watch.refresh();
    expect(watch.refresh()).toBe(second); // one more read, however many claims ask
    answers[0]!([]); // the first read answers from before the pause
    await first;
    expect(watch.topicPaused("ledger")).toBe(false);
    await Promise.resolve();
    await new Promise((resolve) => setImmediate(resolve));
    expect(answers).toHaveLength(2);
    answers[1]!([{ kind: "topic", name: "ledger" }]);
    await second;
    expect(watch.topicPaused("ledger")).toBe(true);
    await watch.refresh(); // fresh: no read
    expect(answers).toHaveLength(2);
  });

  it("is current (a refresh would read nothing, so a claim need not wait for it) until invalidated or a poll interval old", async () => {
    let now = 0;
    let reads = 0;
    const pausedList = async () => {
      reads++;
      return [];
    };
    const backend = { control: { pausedList } } as unknown as Backend;
    const watch = new PauseWatch(backend, { now: () => now } as never, 1_000, (error) => {
      throw error;
    });
    expect(watch.current).toBe(false); // never read
    await watch.refresh();
    expect([watch.current, reads]).toEqual([true, 1]);
    now = 999;
    expect(watch.current).toBe(true);
    now = 1_000;
    expect(watch.current).toBe(false); // a poll interval old
    await watch.refresh();
    expect([watch.current, reads]).toEqual([true, 2]);
    watch.invalidate(); // this process paused or resumed something
    expect(watch.current).toBe(false);
    await watch.refresh();
    expect([watch.current, reads]).toEqual([true, 3]);
  });
});
