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
});
