import { describe, expect, it } from "vitest";
import { BACKENDS } from "./backends.js";
import { useHarness, waitFor } from "./harness.js";

describe.each(BACKENDS)("continuations enqueued while their parent finishes, on $name", (entry) => {
  const harness = useHarness(entry);

  // J5: a continuation stored `waiting` in the same instant its parent's
  // outcome is written is still released. (On PostgreSQL the parent's finish
  // could take its snapshot before the child's insert committed and never
  // see the child; the insert now settles such children after its commit.)
  it("J5: every continuation of a parent that is finishing right then runs", async () => {
    const h = harness();
    const server = await h.start({ workerCount: 4, handlers: { step: { handle: () => undefined } } });
    const children: string[] = [];
    for (let i = 0; i < 40; i++) {
      const parent = await server.publisher.enqueue("step", { i });
      children.push(await server.publisher.enqueue("step", { i, child: true }, { parentId: parent }));
    }
    await waitFor(
      async () => {
        const jobs = await Promise.all(children.map((id) => server.backend.inspect.jobGet({ id })));
        return jobs.every((j) => j?.stage === "success");
      },
      "every continuation to succeed",
      10_000,
    );
    expect(children).toHaveLength(40);
  });
});
