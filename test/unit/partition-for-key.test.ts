import { describe, expect, it } from "vitest";
import { InvalidArgumentError } from "../../packages/runtime/src/errors.js";
import { murmur2, partitionForKey, partitionKeyBytes } from "../../packages/runtime/src/core/partition/partition-for-key.js";

const utf8 = (s: string) => new TextEncoder().encode(s);
const toPositive = (hash: number) => hash & 0x7fffffff;

// Kafka's own vectors: apache/kafka
// clients/src/test/java/org/apache/kafka/common/utils/UtilsTest.java, testMurmur2.
// Kafka's test uses String.getBytes() (ASCII here) and `new byte[] {'a', 'b', 'c'}`.
const KAFKA_MURMUR2_VECTORS: ReadonlyArray<readonly [string, number]> = [
  ["21", -973932308],
  ["foobar", -790332482],
  ["a-little-bit-long-string", -985981536],
  ["a-little-bit-longer-string", -1486304829],
  ["lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971],
  ["abc", 479470107],
];

// Kafka's vectors leave a 1-byte tail (length % 4 === 1) untested. These are
// kafkajs's test data for its Java-compatible partitioner, "Generated with
// src/producer/partitioners/defaultJava/Test.java" (i.e. printed by Kafka's
// murmur2 run in Java): tulios/kafkajs
// src/producer/partitioners/defaultJava/murmur2.spec.js; lengths 1 to 9.
// (Not the data of kafkajs's legacy `default` partitioner, which is not
// Java-compatible and differs.)
const JAVA_PRINTED_VECTORS: ReadonlyArray<readonly [string, number]> = [
  ["0", 971027396],
  ["1", -1993445489],
  ["128", -326012175],
  ["2187", -1508407203],
  ["16384", -325739742],
  ["78125", -1654490814],
  ["279936", 1462227128],
  ["823543", -2014198330],
  ["2097152", 607668903],
  ["4782969", -1182699775],
  ["10000000", -1830336757],
  ["19487171", -1603849305],
  ["35831808", -857013643],
  ["62748517", -1167431028],
  ["105413504", -381294639],
  ["170859375", -1658323481],
  ["100:48069", 1009543857],
];

describe("murmur2", () => {
  it.each(KAFKA_MURMUR2_VECTORS)("hashes %j as Kafka's Utils.murmur2 does", (input, expected) => {
    expect(murmur2(utf8(input))).toBe(expected);
  });

  it.each(JAVA_PRINTED_VECTORS)("hashes %j as Kafka's murmur2 run in Java printed (every tail length)", (input, expected) => {
    expect(murmur2(utf8(input))).toBe(expected);
  });

  it("returns a signed 32-bit integer", () => {
    for (const [input] of KAFKA_MURMUR2_VECTORS) {
      const hash = murmur2(utf8(input));
      expect(Number.isInteger(hash)).toBe(true);
      expect(hash).toBe(hash | 0);
    }
  });

  it("reads only the view it is given (a subarray with an offset)", () => {
    const backing = utf8("xxfoobaryy");
    expect(murmur2(backing.subarray(2, 8))).toBe(-790332482);
  });

  it("does not modify its input", () => {
    const bytes = utf8("a-little-bit-longer-string");
    const copy = Uint8Array.from(bytes);
    murmur2(bytes);
    expect(bytes).toEqual(copy);
  });
});

describe("partitionForKey", () => {
  // Expected partitions derived from the Kafka vectors above: toPositive(hash) % n.
  // e.g. "foobar": -790332482 & 0x7fffffff = 1357151166; % 12 = 6, % 50 = 16.
  const KNOWN: ReadonlyArray<readonly [string, number, number]> = [
    ["foobar", 12, 6],
    ["foobar", 50, 16],
    ["foobar", 16, 14],
    ["21", 7, 3],
    ["21", 16, 12],
    ["a-little-bit-long-string", 12, 8],
    ["a-little-bit-longer-string", 12, 11],
    ["lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", 100, 77],
    ["abc", 7, 4],
  ];

  it.each(KNOWN)("puts string key %j on partition (toPositive(murmur2) %% %i) = %i", (key, partitions, expected) => {
    expect(partitionForKey(key, partitions)).toBe(expected);
  });

  it("agrees with toPositive(murmur2(utf8(key))) % n for every vector and several counts", () => {
    for (const [key, hash] of KAFKA_MURMUR2_VECTORS) {
      for (const n of [1, 2, 3, 5, 8, 12, 64, 100, 4096]) {
        expect(partitionForKey(key, n)).toBe(toPositive(hash) % n);
      }
    }
  });

  it("uses toPositive, not Math.abs, for negative hashes", () => {
    // -790332482: Math.abs gives 790332482 (% 12 = 2); toPositive gives 1357151166 (% 12 = 6).
    expect(Math.abs(-790332482) % 12).toBe(2);
    expect(partitionForKey("foobar", 12)).toBe(6);
  });

  it("always returns 0 for a single partition and stays within range", () => {
    for (const key of ["", "a", "foobar", 0, -1, 123456789, 2n ** 62n]) {
      expect(partitionForKey(key, 1)).toBe(0);
      const p = partitionForKey(key, 7);
      expect(p).toBeGreaterThanOrEqual(0);
      expect(p).toBeLessThan(7);
    }
  });

  it("accepts the empty string (zero bytes)", () => {
    expect(partitionKeyBytes("")).toEqual(new Uint8Array(0));
    expect(partitionForKey("", 12)).toBe(toPositive(murmur2(new Uint8Array(0))) % 12);
  });
});

describe("key bytes", () => {
  const bytes = (...values: number[]) => Uint8Array.from(values);

  it("encodes a string as UTF-8, like Kafka's StringSerializer", () => {
    expect(partitionKeyBytes("foobar")).toEqual(utf8("foobar"));
    expect(partitionKeyBytes("héllo")).toEqual(bytes(0x68, 0xc3, 0xa9, 0x6c, 0x6c, 0x6f));
    expect(partitionKeyBytes("日本")).toEqual(bytes(0xe6, 0x97, 0xa5, 0xe6, 0x9c, 0xac));
    expect(partitionKeyBytes("😀")).toEqual(bytes(0xf0, 0x9f, 0x98, 0x80));
  });

  it("hashes a multi-byte string through its UTF-8 bytes", () => {
    for (const key of ["héllo", "日本", "😀", "Ünïcödé-ключ-鍵"]) {
      expect(partitionForKey(key, 97)).toBe(toPositive(murmur2(utf8(key))) % 97);
    }
    // Composed and decomposed "é" are different bytes, so different keys: no normalization.
    expect(partitionKeyBytes("é")).toEqual(bytes(0xc3, 0xa9));
    expect(partitionKeyBytes("e\u0301")).toEqual(bytes(0x65, 0xcc, 0x81));
  });

  it("encodes an integer as 8 bytes big-endian, like Kafka's LongSerializer", () => {
    expect(partitionKeyBytes(0)).toEqual(bytes(0, 0, 0, 0, 0, 0, 0, 0));
    expect(partitionKeyBytes(1)).toEqual(bytes(0, 0, 0, 0, 0, 0, 0, 1));
    expect(partitionKeyBytes(256)).toEqual(bytes(0, 0, 0, 0, 0, 0, 1, 0));
    expect(partitionKeyBytes(0x0102030405)).toEqual(bytes(0, 0, 0, 1, 2, 3, 4, 5));
    expect(partitionKeyBytes(Number.MAX_SAFE_INTEGER)).toEqual(bytes(0x00, 0x1f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff));
  });

  it("hashes key 1 as murmur2 of 00 00 00 00 00 00 00 01", () => {
    const one = bytes(0, 0, 0, 0, 0, 0, 0, 1);
    for (const n of [1, 3, 12, 64, 1000]) {
      expect(partitionForKey(1, n)).toBe(toPositive(murmur2(one)) % n);
      expect(partitionForKey(1n, n)).toBe(toPositive(murmur2(one)) % n);
    }
  });

  it("encodes negative integers in two's complement", () => {
    expect(partitionKeyBytes(-1)).toEqual(bytes(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff));
    expect(partitionKeyBytes(-2)).toEqual(bytes(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe));
    expect(partitionKeyBytes(-256)).toEqual(bytes(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00));
    expect(partitionKeyBytes(Number.MIN_SAFE_INTEGER)).toEqual(bytes(0xff, 0xe0, 0, 0, 0, 0, 0, 0x01));
    expect(partitionForKey(-1, 12)).toBe(toPositive(murmur2(bytes(0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff))) % 12);
  });

  it("treats -0 as 0 (a Java long has no negative zero)", () => {
    expect(partitionKeyBytes(-0)).toEqual(partitionKeyBytes(0));
  });

  it("encodes a bigint over the whole signed 64-bit range", () => {
    expect(partitionKeyBytes(2n ** 63n - 1n)).toEqual(bytes(0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff));
    expect(partitionKeyBytes(-(2n ** 63n))).toEqual(bytes(0x80, 0, 0, 0, 0, 0, 0, 0));
    expect(partitionKeyBytes(2n ** 53n + 1n)).toEqual(bytes(0x00, 0x20, 0, 0, 0, 0, 0, 0x01));
    expect(partitionKeyBytes(-1n)).toEqual(partitionKeyBytes(-1));
  });

  it("gives a number and the equal bigint the same partition", () => {
    for (const k of [0, 1, -1, 42, 1_000_000_007, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER]) {
      expect(partitionForKey(k, 1000)).toBe(partitionForKey(BigInt(k), 1000));
    }
  });

  it('keeps 42 and "42" apart: LongSerializer bytes vs StringSerializer bytes', () => {
    expect(partitionKeyBytes(42)).toEqual(bytes(0, 0, 0, 0, 0, 0, 0, 42));
    expect(partitionKeyBytes("42")).toEqual(bytes(0x34, 0x32));
    expect(murmur2(partitionKeyBytes(42))).not.toBe(murmur2(partitionKeyBytes("42")));
    expect(partitionForKey(42, 7)).toBe(6);
    expect(partitionForKey("42", 7)).toBe(3);
  });
});

describe("bad input", () => {
  const expectInvalid = (fn: () => unknown, message: RegExp) => {
    let thrown: unknown;
    try {
      fn();
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(InvalidArgumentError);
    expect((thrown as InvalidArgumentError).code).toBe("INVALID_ARGUMENT");
    expect((thrown as Error).message).toMatch(message);
  };

  it.each([
    ["a fraction", 1.5],
    ["NaN", Number.NaN],
    ["Infinity", Number.POSITIVE_INFINITY],
    ["-Infinity", Number.NEGATIVE_INFINITY],
    ["2^53 (unsafe)", 2 ** 53],
    ["-(2^53) (unsafe)", -(2 ** 53)],
    ["1e300", 1e300],
  ])("refuses a number key that is %s", (_what, key) => {
    expectInvalid(() => partitionForKey(key, 12), /not a safe integer/);
  });

  it.each([
    ["2^63", 2n ** 63n],
    ["-(2^63) - 1", -(2n ** 63n) - 1n],
    ["2^64", 2n ** 64n],
  ])("refuses a bigint key of %s", (_what, key) => {
    expectInvalid(() => partitionForKey(key, 12), /signed 64-bit range/);
  });

  it.each([
    ["null", null],
    ["undefined", undefined],
    ["a boolean", true],
    ["an object", { id: 1 }],
    ["an array", [1]],
    ["a symbol", Symbol("k")],
    ["a Uint8Array", new Uint8Array([1])],
  ])("refuses %s as a key", (_what, key) => {
    expectInvalid(() => partitionForKey(key as never, 12), /partition key must be a string, an integer number or a bigint/);
  });

  it("refuses a string with a lone surrogate (Java and TextEncoder encode it differently)", () => {
    expectInvalid(() => partitionForKey("a\uD800b", 12), /lone UTF-16 surrogate/);
    expectInvalid(() => partitionForKey("\uDC00", 12), /lone UTF-16 surrogate/);
    expect(() => partitionForKey("\uD83D\uDE00", 12)).not.toThrow();
  });

  it.each([
    ["0", 0],
    ["-1", -1],
    ["1.5", 1.5],
    ["NaN", Number.NaN],
    ["Infinity", Number.POSITIVE_INFINITY],
    ["a string", "3"],
    ["undefined", undefined],
    ["2^53", 2 ** 53],
  ])("refuses a partition count of %s", (_what, partitions) => {
    expectInvalid(() => partitionForKey("foobar", partitions as never), /partitions must be an integer >= 1/);
  });
});
