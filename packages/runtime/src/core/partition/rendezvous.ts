/**
 * Which server owns which partition, by rendezvous (highest-random-weight)
 * hashing: every member scores every (topic, partition) with a hash, and the
 * highest score owns it.
 *
 * Why rendezvous hashing: every server computes the same answer from the
 * same member list with no coordination, and when a member joins or leaves
 * only the partitions it wins or held move; every other partition keeps its
 * owner, so a membership change does not reshuffle the whole cluster.
 */
import { Buffer } from "node:buffer";
import { createHash } from "node:crypto";
import { InvalidArgumentError } from "../../errors.js";

/** One partition of a topic, as returned by {@link ownedPartitions}. */
export interface TopicPartition {
  readonly topic: string;
  readonly partition: number;
}

/**
 * The owner of `partition` of `topic` among `members`: the member with the
 * highest {@link rendezvousWeight}; on an equal weight (a 64-bit collision,
 * in practice never) the member id that sorts first by UTF-16 code units.
 * The order of `members` and repeated ids do not matter.
 *
 * Returns `null` when `members` is empty. Throws `InvalidArgumentError` when
 * a member or `topic` is not a string or `partition` is not an integer >= 0.
 */
export function rendezvousOwner(members: readonly string[], topic: string, partition: number): string | null {
  checkMembers(members);
  checkTopic(topic);
  checkPartition(partition);
  return ownerAmong(members, topic, partition);
}

/**
 * Every (topic, partition) that `self` owns among `self` and `members` (self
 * counts as a member even when `members` omits it, so a server that has not
 * yet seen its own heartbeat still claims its share). Partitions run from 0
 * to `partitions - 1` for each topic.
 *
 * Ordered by topic name (UTF-16 code units), then partition number, whatever
 * the order of `topics`, so two servers list the same set the same way.
 * Throws `InvalidArgumentError` on a non-string member or self, a topic
 * listed twice, or a partition count that is not an integer from 1 to 2^32 - 1.
 */
export function ownedPartitions(self: string, members: readonly string[], topics: readonly { name: string; partitions: number }[]): TopicPartition[] {
  if (typeof self !== "string") throw new InvalidArgumentError(`self must be a member id string, got ${typeof self}`);
  checkMembers(members);
  if (!Array.isArray(topics)) throw new InvalidArgumentError("topics must be an array of { name, partitions }");
  const seen = new Set<string>();
  for (const t of topics) {
    if (typeof t !== "object" || t === null)
      throw new InvalidArgumentError(`every topic must be a { name, partitions } object, got ${t === null ? "null" : typeof t}`);
    checkTopic(t.name);
    if (typeof t.partitions !== "number" || !Number.isInteger(t.partitions) || t.partitions < 1 || t.partitions > 0xffffffff) {
      throw new InvalidArgumentError(`topic "${t.name}": partitions must be an integer from 1 to 4294967295, got ${String(t.partitions)}`);
    }
    if (seen.has(t.name)) throw new InvalidArgumentError(`topic "${t.name}" is listed twice`);
    seen.add(t.name);
  }
  const all = [...new Set([self, ...members])];
  const sorted = [...topics].sort((a, b) => compareIds(a.name, b.name));
  const owned: TopicPartition[] = [];
  for (const t of sorted) {
    for (let partition = 0; partition < t.partitions; partition++) {
      if (ownerAmong(all, t.name, partition) === self) owned.push({ topic: t.name, partition });
    }
  }
  return owned;
}

/**
 * The weight of `member` for (`topic`, `partition`): the first 8 bytes,
 * big-endian, of SHA-256 over a length-prefixed encoding (member UTF-8 bytes
 * and topic UTF-8 bytes, each after its uint32 byte length, then the
 * partition as a uint32), read as an unsigned 64-bit `bigint`.
 *
 * SHA-256 rather than a fast non-cryptographic hash because the weights of
 * different members for one partition must be independent, and the length
 * prefixes keep ("ab", "c") and ("a", "bc") apart. The value is stable across
 * processes, platforms and releases: changing it would move every partition.
 */
export function rendezvousWeight(member: string, topic: string, partition: number): bigint {
  const memberBytes = Buffer.from(member, "utf8");
  const topicBytes = Buffer.from(topic, "utf8");
  const input = Buffer.alloc(4 + memberBytes.length + 4 + topicBytes.length + 4);
  let at = input.writeUInt32BE(memberBytes.length, 0);
  at += memberBytes.copy(input, at);
  at = input.writeUInt32BE(topicBytes.length, at);
  at += topicBytes.copy(input, at);
  input.writeUInt32BE(partition, at);
  return createHash("sha256").update(input).digest().readBigUInt64BE(0);
}

function ownerAmong(members: readonly string[], topic: string, partition: number): string | null {
  let best: string | null = null;
  let bestWeight = -1n;
  for (const member of members) {
    const weight = rendezvousWeight(member, topic, partition);
    if (weight > bestWeight || (weight === bestWeight && best !== null && compareIds(member, best) < 0)) {
      best = member;
      bestWeight = weight;
    }
  }
  return best;
}

function compareIds(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function checkMembers(members: readonly string[]): void {
  if (!Array.isArray(members)) throw new InvalidArgumentError("members must be an array of member id strings");
  for (const m of members) {
    if (typeof m !== "string") throw new InvalidArgumentError(`every member id must be a string, got ${typeof m}`);
  }
}

function checkTopic(topic: string): void {
  if (typeof topic !== "string") throw new InvalidArgumentError(`topic must be a string, got ${typeof topic}`);
}

function checkPartition(partition: number): void {
  if (typeof partition !== "number" || !Number.isInteger(partition) || partition < 0 || partition > 0xffffffff) {
    throw new InvalidArgumentError(`partition must be an integer from 0 to 4294967295, got ${String(partition)}`);
  }
}
