import { InvalidConfigError, describeValue } from "../../errors.js";
import { describeName, nameProblem } from "../stored-name.js";

/** A topic registered in the server options: a name and a fixed partition count. */
export interface TopicConfig {
  readonly name: string;
  /** Fixed for the topic's life: a server started with another count for a stored topic refuses to start. */
  readonly partitions: number;
}

/** The reserved topic of `enqueueRecurringSequential`, registered when `recurringSequentialPartitions` is set. */
export const RECURRING_SEQUENTIAL_TOPIC = "__later_recurring";

/** Most partitions a topic may have: each is a row, a lease and a poller slot to visit. */
export const MAX_PARTITIONS = 4096;

/**
 * Declares a topic for the `topics` server option: `topic("orders", 8)`.
 * Names are 1–200 characters of well-formed Unicode without NUL (see
 * `stored-name.ts`) and may not start with `__later` (reserved);
 * `partitions` is an integer from 1 to {@link MAX_PARTITIONS}. Throws
 * `InvalidConfigError` otherwise.
 */
export function topic(name: string, partitions: number): TopicConfig {
  const bad = nameProblem(name);
  if (bad !== null) throw new InvalidConfigError(`topic name ${describeName(name)} ${bad}`);
  if (name.startsWith("__later")) throw new InvalidConfigError(`topic name "${name}" is reserved (names starting with "__later" are later's own)`);
  return Object.freeze({ name, partitions: checkPartitions(`topic "${name}"`, partitions) });
}

/** Checks a partition count; `what` names it in the error. */
export function checkPartitions(what: string, partitions: unknown): number {
  if (typeof partitions !== "number" || !Number.isInteger(partitions) || partitions < 1 || partitions > MAX_PARTITIONS) {
    throw new InvalidConfigError(`${what}: partitions must be an integer from 1 to ${MAX_PARTITIONS}, got ${describeValue(partitions)}`);
  }
  return partitions;
}
