// Member names that look risky but that later-gen accepts (schemas/names.schema.ts: `constructor`,
// `then`, `toString`, `class`, a quoted name, `$`, a topic job `hasOwnProperty`) work end to end:
// each job is enqueued through its handle and reaches its own handler, with its Dates revived.
import { describe, expect, it } from "vitest";
import { topic } from "@later/runtime";
import { BACKENDS } from "../conformance/backends.js";
import { waitFor } from "../conformance/harness.js";
import { NamesBuilder } from "./schemas/names.generated.js";

describe.each(BACKENDS)("jobs with risky member names on $name", (entry) => {
  it("are enqueued and handled each by its own handler", async () => {
    const db = await entry.createDatabase();
    const seen: string[] = [];
    const record = (name: string) => (_ctx: unknown, payload: { n: number }) => void seen.push(`${name}:${payload.n}`);
    try {
      const server = await new NamesBuilder({ context: null, backend: db.backend(), topics: [topic("names", 2)], pollIntervalMs: 50, autoMigrate: true })
        .withConstructorHandler(record("constructor"))
        .withThenHandler(record("then"))
        .withToStringHandler(record("toString"))
        .withClassHandler(record("class"))
        .withQuotedHandler(record("quoted"))
        .with$Handler((_ctx, payload) => void seen.push(`$:${payload.at instanceof Date ? payload.at.toISOString() : "not a Date"}`))
        .withHasOwnPropertyHandler(record("hasOwnProperty"))
        .build();
      try {
        expect(Object.keys(server.jobs).sort()).toEqual(["$", "class", "constructor", "hasOwnProperty", "quoted", "then", "toString"]);
        await server.jobs.constructor.enqueue({ n: 1 });
        await server.jobs.then.enqueue({ n: 2 });
        await server.jobs.toString.enqueue({ n: 3 });
        await server.jobs.class.enqueue({ n: 4 });
        await server.jobs.quoted.enqueue({ n: 5 });
        await server.jobs.$.enqueue({ at: new Date("2026-01-02T03:04:05.678Z") });
        await server.jobs.hasOwnProperty.enqueueToPartition({ n: 7, key: "k" });
        await waitFor(async () => (seen.length === 7 ? true : null), "every job to be handled");
        expect(seen.sort()).toEqual(["$:2026-01-02T03:04:05.678Z", "class:4", "constructor:1", "hasOwnProperty:7", "quoted:5", "then:2", "toString:3"]);
      } finally {
        await server.shutdown({ deadlineMs: 1_000 });
      }
    } finally {
      await db.dispose();
    }
  });
});
