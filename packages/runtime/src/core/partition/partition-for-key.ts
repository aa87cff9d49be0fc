/**
 * Which partition of a topic a keyed job goes to, computed exactly as
 * Kafka's default partitioner does for a keyed record, so a job enqueued
 * with key `k` lands on the same partition number as a Kafka record with key
 * `k` produced with the matching serializer.
 *
 * No well-kept npm library computes Kafka's murmur2 variant with a stable
 * API (kafkajs has one inside its producer internals, not exported as API),
 * so it is written out here against Kafka's own test vectors.
 *
 * References (apache/kafka, `clients/src/main/java/org/apache/kafka/`):
 * `common/utils/Utils.java` (`murmur2`, `toPositive`),
 * `clients/producer/internals/BuiltInPartitioner.java` (`partitionForKey`),
 * `common/serialization/StringSerializer.java` and `LongSerializer.java`
 * (the key bytes).
 */
import { InvalidArgumentError, describeValue } from "../../errors.js";

/**
 * A partitioning key: a string, an integer `number`, or a `bigint`.
 *
 * Strings hash as their UTF-8 bytes (Kafka's `StringSerializer`); integers,
 * whether `number` or `bigint`, hash as 8 bytes big-endian two's complement
 * (Kafka's `LongSerializer`). So `42` and `"42"` are different keys and
 * usually land on different partitions, while `42` and `42n` are the same key.
 */
export type PartitionKey = string | number | bigint;

const SEED = 0x9747b28c;
const M = 0x5bd1e995;
const R = 24;
const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;
const utf8 = new TextEncoder();
/** A lone UTF-16 surrogate: in `u` mode a well-formed pair is one code point, so this matches only unpaired halves. */
const LONE_SURROGATE = /\p{Surrogate}/u;

/**
 * Kafka's `Utils.murmur2`: the 32-bit MurmurHash2 variant with seed
 * `0x9747b28c`, `m = 0x5bd1e995`, `r = 24`, reading 4-byte little-endian
 * chunks and folding the 1–3 trailing bytes in as Kafka does.
 *
 * Returns the signed 32-bit integer Kafka returns (Java `int`), e.g.
 * `murmur2(utf8("foobar")) === -790332482`. Pure; `bytes` is not modified.
 */
export function murmur2(bytes: Uint8Array): number {
  const length = bytes.length;
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  let h = SEED ^ length;
  const whole = length & ~3;
  for (let i = 0; i < whole; i += 4) {
    let k = view.getInt32(i, true);
    k = Math.imul(k, M);
    k ^= k >>> R;
    k = Math.imul(k, M);
    h = Math.imul(h, M);
    h ^= k;
  }
  // Kafka's `switch (length % 4)` falls through from case 3 to case 1.
  const rest = length & 3;
  if (rest === 3) h ^= view.getUint8(whole + 2) << 16;
  if (rest >= 2) h ^= view.getUint8(whole + 1) << 8;
  if (rest >= 1) {
    h ^= view.getUint8(whole);
    h = Math.imul(h, M);
  }
  h ^= h >>> 13;
  h = Math.imul(h, M);
  h ^= h >>> 15;
  return h | 0;
}

/**
 * The bytes Kafka would hash for `key`:
 *
 * - a string: its UTF-8 bytes, as Kafka's `StringSerializer` (default UTF-8).
 *   The empty string is a valid key (zero bytes). A string holding a lone
 *   UTF-16 surrogate is refused: Java encodes it as `?` and `TextEncoder` as
 *   U+FFFD, so no single answer would match every Kafka client.
 * - an integer `number` (`Number.isSafeInteger`) or a `bigint` from -2^63 to
 *   2^63 - 1: 8 bytes, big-endian two's complement, as Kafka's
 *   `LongSerializer` (`1` is `00 00 00 00 00 00 00 01`, `-1` is eight `ff`).
 *
 * Throws `InvalidArgumentError` for anything else: a fractional, unsafe or
 * non-finite number (so an integer above 2^53 must be passed as a `bigint`,
 * where it cannot have been rounded already), a `bigint` outside the signed
 * 64-bit range, or another type.
 */
export function partitionKeyBytes(key: PartitionKey): Uint8Array {
  if (typeof key === "string") {
    if (LONE_SURROGATE.test(key)) {
      throw new InvalidArgumentError(
        `partition key ${JSON.stringify(key)} holds a lone UTF-16 surrogate, which has no UTF-8 encoding; use a well-formed string`,
      );
    }
    return utf8.encode(key);
  }
  if (typeof key === "number") {
    if (!Number.isSafeInteger(key)) {
      throw new InvalidArgumentError(
        `partition key ${String(key)} is not a safe integer: a number key must be an integer from ${Number.MIN_SAFE_INTEGER} to ${Number.MAX_SAFE_INTEGER} (pass larger integers as a bigint, other values as a string)`,
      );
    }
    return int64Bytes(BigInt(key));
  }
  if (typeof key === "bigint") {
    if (key < INT64_MIN || key > INT64_MAX) {
      throw new InvalidArgumentError(`partition key ${key}n is outside the signed 64-bit range (-2^63 to 2^63 - 1) that Kafka's LongSerializer encodes`);
    }
    return int64Bytes(key);
  }
  throw new InvalidArgumentError(`partition key must be a string, an integer number or a bigint, got ${key === null ? "null" : typeof key}`);
}

/**
 * The partition, from 0 to `partitions - 1`, that Kafka's default
 * partitioner picks for a record with this key:
 * `(murmur2(keyBytes) & 0x7fffffff) % partitions`. The mask is Kafka's
 * `Utils.toPositive`, not `Math.abs`, which would differ for negative hashes.
 *
 * Key bytes are those of {@link partitionKeyBytes}: a string as UTF-8
 * (`StringSerializer`), an integer `number` or `bigint` as 8 big-endian bytes
 * (`LongSerializer`). A Kafka producer with a `LongSerializer` key therefore
 * puts key `42` on the same partition as `partitionForKey(42, n)`, and one
 * with a `StringSerializer` key puts `"42"` on `partitionForKey("42", n)`;
 * the two generally differ, so pick one form per topic and keep it.
 *
 * The result depends on `partitions`: changing a topic's partition count
 * moves keys, which is why a topic's count is fixed for its life.
 *
 * Throws `InvalidArgumentError` when the key is not one of those forms (see
 * {@link partitionKeyBytes}) or `partitions` is not an integer >= 1.
 */
export function partitionForKey(key: PartitionKey, partitions: number): number {
  if (typeof partitions !== "number" || !Number.isSafeInteger(partitions) || partitions < 1) {
    throw new InvalidArgumentError(`partitions must be an integer >= 1, got ${describeValue(partitions)}`);
  }
  return (murmur2(partitionKeyBytes(key)) & 0x7fffffff) % partitions;
}

function int64Bytes(value: bigint): Uint8Array {
  const bytes = new Uint8Array(8);
  new DataView(bytes.buffer).setBigInt64(0, value, false);
  return bytes;
}
