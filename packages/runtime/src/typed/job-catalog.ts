/**
 * Where `Date` values sit inside a payload, as a path from the payload root:
 * a string is a property name, `null` is "every element of this array, or
 * every value of this record". JSON turns a `Date` into its ISO string on
 * the way in; the decoder turns the string at each path back into a `Date`.
 */
export type DatePath = readonly (string | null)[];

/**
 * What the generated module knows about one declared job. Written by
 * `later-gen` from `jobs.schema.ts`; applications never build one by hand.
 */
export interface JobSpec {
  /** The builder method that registers its handler, named in `build()`'s error. */
  readonly handlerMethod: string;
  /** Its handle's name on `jobs` (the member name in camelCase), when that is not the job type itself. */
  readonly handle?: string;
  /** Paths of the payload's `Date` fields. Default none. */
  readonly datePaths?: readonly DatePath[];
  /** The topic of a partitioned job (`@topic`). */
  readonly topic?: string;
  /** The payload field hashed to a partition (`@partitionKey`). */
  readonly partitionKey?: string;
  /**
   * The topic's partition count when the schema declares it (`@partitions`):
   * every server and publisher built from the module registers the topic
   * with it. Every job of one topic carries the same count.
   */
  readonly partitions?: number;
}

/** Every declared job, by stored job type. */
export type JobCatalog = Readonly<Record<string, JobSpec>>;

/**
 * The decoder of a job's stored payload: `JSON.parse`, then every string at
 * a {@link DatePath} becomes a `Date`. A string that is not a valid date
 * throws, so the worker fails the job as undecodable (`PAYLOAD_DECODE`)
 * instead of running the handler with garbage.
 */
export function payloadDecoder(jobType: string, spec: JobSpec): (json: string) => unknown {
  const paths = spec.datePaths ?? [];
  if (paths.length === 0) return (json) => JSON.parse(json);
  return (json) => {
    const value: unknown = JSON.parse(json);
    for (const path of paths) reviveAt(value, path, 0, jobType);
    return value;
  };
}

function reviveAt(holder: unknown, path: DatePath, depth: number, jobType: string): void {
  if (holder === null || typeof holder !== "object") return;
  const segment = path[depth];
  const last = depth === path.length - 1;
  const record = holder as Record<string, unknown>;
  const keys = segment === null ? Object.keys(record) : Object.hasOwn(record, segment!) ? [segment!] : [];
  for (const key of keys) {
    if (!last) {
      reviveAt(record[key], path, depth + 1, jobType);
      continue;
    }
    const text = record[key];
    if (typeof text !== "string") continue;
    const date = new Date(text);
    if (Number.isNaN(date.getTime())) {
      throw new Error(`field ${describePath(path)} of "${jobType}" holds "${text}", which is not a date`);
    }
    record[key] = date;
  }
}

function describePath(path: DatePath): string {
  return path
    .map((s) => (s === null ? "[*]" : `.${s}`))
    .join("")
    .replace(/^\./, "");
}
