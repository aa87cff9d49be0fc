// Bad input to the retained log (issue 14, point 6) on every backend: each is a LaterError with a
// stable code and writes nothing (the log tables' row counts are unchanged). Unregistered topics,
// changed partition counts and commits beyond the end are in retained-log*.test.ts beside this.
import { describe, expect, it } from "vitest";
import { logTopic, MAX_LOG_HEADERS_BYTES, MAX_LOG_VALUE_BYTES, RecordTooLargeError } from "@later/runtime";
import { BACKENDS } from "./backends.js";
import { refusal, useLog } from "./log-harness.js";

describe.each(BACKENDS)("retained log refusals on $name", (entry) => {
  const harness = useLog(entry);

  it("a value that is not bytes or a string, and malformed records, are INVALID_ARGUMENT; nothing is written", async () => {
    const h = await harness();
    const log = await h.open();
    await log.append("events", { partition: 0, value: "seed" });
    const before = await h.counts();
    const cases: [unknown, RegExp][] = [
      [{ partition: 0, value: 42 }, /value must be a Uint8Array or a string, got 42/],
      [{ partition: 0, value: { a: 1 } }, /value must be a Uint8Array or a string, got an object/],
      [{ partition: 0, value: null }, /value must be a Uint8Array or a string, got null/],
      [{ partition: 0 }, /value must be a Uint8Array or a string, got undefined/],
      [{ partition: 0, value: [1, 2] }, /value must be a Uint8Array or a string, got an object/],
      [{ value: "x" }, /needs a key \(hashed to a partition\) or a partition/],
      [{ key: "k", partition: 0, value: "x" }, /key or its partition, not both/],
      [{ key: 7, value: "x" }, /key must be a string/],
      [{ key: "", value: "x" }, /key must not be empty/],
      [{ key: "a\0b", value: "x" }, /key must not contain NUL/],
      [{ partition: 4, value: "x" }, /partition must be an integer from 0 to 3 \(topic "events" has 4\), got 4/],
      [{ partition: -1, value: "x" }, /partition must be an integer from 0 to 3/],
      [{ partition: 1.5, value: "x" }, /partition must be an integer from 0 to 3/],
      [{ partition: 0, value: "x", headers: { n: 1 } }, /header "n" must be a string/],
      [{ partition: 0, value: "x", headers: "h" }, /headers must be an object of strings/],
      [{ partition: 0, value: "x", extra: true }, /unknown record field "extra"/],
      [null, /a record must be an object/],
    ];
    for (const [record, message] of cases) {
      const error = await refusal(log.append("events", record as never));
      expect(error.code, JSON.stringify(record)).toBe("INVALID_ARGUMENT");
      expect(error.message).toMatch(message);
    }
    const notArray = await refusal(log.appendMany("events", "records" as never));
    expect(notArray.code).toBe("INVALID_ARGUMENT");
    expect(await h.counts()).toEqual(before);
  });

  it("a record over the size limit is RECORD_TOO_LARGE naming the limit; one at the limit is stored", async () => {
    const h = await harness();
    const log = await h.open();
    const before = await h.counts();
    const big = await refusal(log.append("events", { partition: 0, value: new Uint8Array(MAX_LOG_VALUE_BYTES + 1) }));
    expect(big.code).toBe("RECORD_TOO_LARGE");
    expect(big).toBeInstanceOf(RecordTooLargeError);
    expect(big.message).toContain(`${MAX_LOG_VALUE_BYTES + 1} bytes, over the limit of ${MAX_LOG_VALUE_BYTES} (1 MiB)`);
    // A string counts its UTF-8 bytes: 2 per "é".
    const wide = await refusal(log.append("events", { partition: 0, value: "é".repeat(MAX_LOG_VALUE_BYTES / 2 + 1) }));
    expect(wide.code).toBe("RECORD_TOO_LARGE");
    const headers = await refusal(log.append("events", { partition: 0, value: "x", headers: { h: "a".repeat(MAX_LOG_HEADERS_BYTES) } }));
    expect(headers.code).toBe("RECORD_TOO_LARGE");
    expect(headers.message).toContain(`over the limit of ${MAX_LOG_HEADERS_BYTES} (64 KiB)`);
    expect(await h.counts()).toEqual(before);
    const atLimit = new Uint8Array(MAX_LOG_VALUE_BYTES).fill(7);
    const position = await log.append("events", { partition: 0, value: atLimit });
    const [record] = await log.read({ topic: "events", partition: 0, fromOffset: position.offset });
    expect(record!.value.byteLength).toBe(MAX_LOG_VALUE_BYTES);
    expect(record!.value.every((b) => b === 7)).toBe(true);
  });

  it("a negative or non-integer offset, epoch, partition or limit is INVALID_ARGUMENT; nothing is written", async () => {
    const h = await harness();
    const log = await h.open();
    await log.appendMany("events", [
      { partition: 0, value: "a" },
      { partition: 0, value: "b" },
    ]);
    const before = await h.counts();
    for (const fromOffset of [-1, 1.5, Number.NaN, "0", null, 2 ** 53]) {
      const error = await refusal(log.read({ topic: "events", partition: 0, fromOffset: fromOffset as never }));
      expect(error.code).toBe("INVALID_ARGUMENT");
      expect(error.message).toMatch(/^read: fromOffset must be a non-negative integer, got /);
    }
    for (const limit of [0, -5, 1.5, 10_001]) {
      expect((await refusal(log.read({ topic: "events", partition: 0, fromOffset: 0, limit }))).code).toBe("INVALID_ARGUMENT");
    }
    expect((await refusal(log.read({ topic: "events", partition: 9, fromOffset: 0 }))).code).toBe("INVALID_ARGUMENT");
    const commit = { topic: "events", group: "g", partition: 0, epoch: 0, offset: 1 };
    for (const bad of [{ offset: -1 }, { offset: 0.5 }, { offset: "1" }, { epoch: -1 }, { epoch: 1.5 }, { partition: -1 }, { group: "" }, { group: 5 }]) {
      const error = await refusal(log.commitOffset({ ...commit, ...bad } as never));
      expect(error.code, JSON.stringify(bad)).toBe("INVALID_ARGUMENT");
    }
    expect(await h.counts()).toEqual(before);
    expect(await log.committed({ topic: "events", group: "g" })).toEqual([]);
  });

  it("bad topics and options fail at construction or open with INVALID_CONFIG", async () => {
    const h = await harness();
    expect(() => logTopic("", 2)).toThrow(expect.objectContaining({ code: "INVALID_CONFIG" }));
    expect(() => logTopic("t", 0)).toThrow(expect.objectContaining({ code: "INVALID_CONFIG" }));
    expect(() => logTopic("__later_x", 2)).toThrow(expect.objectContaining({ code: "INVALID_CONFIG" }));
    expect(() => logTopic("t", 2, { retentionMs: -1 })).toThrow(/retentionMs must be a positive integer/);
    expect(() => logTopic("t", 2, { retainRecords: 1.5 })).toThrow(/retainRecords must be a positive integer/);
    expect(() => logTopic("t", 2, { retention: 1 } as never)).toThrow(/unknown option "retention"/);
    const error = await refusal(h.open({ topics: [{ name: "raw", partitions: 2 } as never] }));
    expect(error.code).toBe("INVALID_CONFIG");
    const twice = await refusal(h.open({ topics: [logTopic("t", 2), logTopic("t", 3)] }));
    expect(twice.code).toBe("INVALID_CONFIG");
  });

  it("calls after close() are SERVER_STOPPED", async () => {
    const h = await harness();
    const log = await h.open();
    await log.close();
    await log.close(); // idempotent
    expect((await refusal(log.append("events", { partition: 0, value: "x" }))).code).toBe("SERVER_STOPPED");
    expect((await refusal(log.read({ topic: "events", partition: 0, fromOffset: 0 }))).code).toBe("SERVER_STOPPED");
  });
});
