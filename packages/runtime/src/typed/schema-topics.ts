import { topic, type TopicConfig } from "../core/partition/topic.js";
import { InvalidConfigError, PartitionCountMismatchError } from "../errors.js";
import type { JobCatalog } from "./job-catalog.js";

/**
 * The topics a generated module's schema declares (`@topic NAME` with
 * `@partitions N`), merged into the `topics` option of a server or publisher
 * built from it, so a topic's partition count is written once, in the
 * schema:
 *
 * - a schema topic the option does not list is added;
 * - one the option lists with the same count is taken once;
 * - one the option lists with another count is refused with
 *   `PartitionCountMismatchError` (`PARTITION_COUNT_MISMATCH`) naming both
 *   counts: starting anyway would hash keys to other partitions than the
 *   rest of the fleet does.
 *
 * Topics only the option lists stay as they are. A value of `explicit` that
 * is not an array is returned as is, for the option's own check to refuse.
 */
export function withSchemaTopics(catalog: JobCatalog, explicit: readonly TopicConfig[] | undefined): readonly TopicConfig[] | undefined {
  const declared = schemaTopics(catalog);
  if (declared.size === 0 || (explicit !== undefined && !Array.isArray(explicit))) return explicit;
  const merged = [...(explicit ?? [])];
  for (const [name, partitions] of declared) {
    const given = merged.find((t) => t !== null && typeof t === "object" && t.name === name);
    if (given === undefined) {
      merged.push(topic(name, partitions));
    } else if (given.partitions !== partitions) {
      throw new PartitionCountMismatchError(
        name,
        partitions,
        given.partitions,
        `topic "${name}" has ${partitions} partitions in the schema (@partitions) but ${String(given.partitions)} in the \`topics\` option; ` +
          `drop it from \`topics\` (the schema registers it) or make the two agree`,
      );
    }
  }
  return merged;
}

/**
 * Refuses to start a server that would run a topic job whose topic it does
 * not register: its handler would never be given a job, and every enqueue of
 * it would be `UNKNOWN_TOPIC`. `jobTypes` are the job types it has handlers
 * for. Throws `InvalidConfigError` naming the topic and the job type.
 */
export function checkHandledTopics(catalog: JobCatalog, jobTypes: Iterable<string>, topics: readonly TopicConfig[] | undefined): void {
  const registered = new Set(Array.isArray(topics) ? topics.map((t) => t?.name) : []);
  for (const type of jobTypes) {
    const name = catalog[type]?.topic;
    if (name === undefined || registered.has(name)) continue;
    throw new InvalidConfigError(
      `job "${type}" is on topic "${name}", which this server does not register: ` +
        `declare \`@partitions N\` next to its @topic in the schema (then regenerate), or add topic("${name}", N) to \`topics\``,
    );
  }
}

/** The schema's topics: name → partition count, from the catalog entries that carry `partitions`. */
function schemaTopics(catalog: JobCatalog): Map<string, number> {
  const declared = new Map<string, number>();
  for (const [type, spec] of Object.entries(catalog)) {
    if (spec.topic === undefined || spec.partitions === undefined) continue;
    const seen = declared.get(spec.topic);
    if (seen !== undefined && seen !== spec.partitions) {
      throw new InvalidConfigError(
        `job "${type}" declares ${spec.partitions} partitions for topic "${spec.topic}", another job ${seen}; regenerate the module`,
      );
    }
    declared.set(spec.topic, spec.partitions);
  }
  return declared;
}
