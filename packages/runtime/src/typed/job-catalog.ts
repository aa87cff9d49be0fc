import type { JobRetention } from "../core/job-retention.js";
import { InvalidArgumentError } from "../errors.js";
import { checkPayload, type NamedShapes, type Shape } from "./payload-shape.js";

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
  /** X9: `@concurrency N`: the type's `concurrency` unless its handler's options give one. */
  readonly concurrency?: number;
  /** X9: `@rateLimit MAX/WINDOW`: the type's `rateLimit` unless its handler's options give one. */
  readonly rateLimit?: { readonly max: number; readonly perMs: number };
  /** X9: `@group FIELD`: a job's `group` is this payload field's value when its enqueue gives none. */
  readonly group?: string;
  /** X9: `@groupConcurrency N`: the type's `groupConcurrency` unless its handler's options give one. */
  readonly groupConcurrency?: number;
  /**
   * The job type's retention per stage from the schema's `@retainSuccess`, `@retainFailed` and
   * `@retainCancelled` tags (J11); the handler option `retention` wins field by field. None: the
   * server's `retentionMs`.
   */
  readonly retention?: JobRetention;
  /**
   * The payload type as a {@link Shape}: every typed enqueue checks the
   * payload against it ({@link payloadValidator}) and the decoder checks a
   * stored payload after reviving its dates. Without it (a module generated
   * before payloads were checked) nothing is checked.
   */
  readonly payload?: Shape;
  /** The named shapes `payload` refers to: its recursive types. */
  readonly shapes?: NamedShapes;
}

/** Every declared job, by stored job type. */
export type JobCatalog = Readonly<Record<string, JobSpec>>;

/**
 * The check every typed enqueue runs on each payload before the untyped
 * publisher sees it: a payload that does not match the job's declared type
 * throws `InvalidArgumentError` (`INVALID_ARGUMENT`) naming the job, the
 * path and the expectation (`resizePhoto payload: sizes: expected number[],
 * got a string`), so nothing is written. A no-op when the catalog entry
 * carries no shape.
 */
export function payloadValidator(jobType: string, spec: JobSpec): (payload: unknown) => void {
  const shape = spec.payload;
  if (shape === undefined) return () => {};
  const named = spec.shapes ?? {};
  return (payload) => {
    const mismatch = checkPayload(shape, payload, named);
    if (mismatch !== null) throw new InvalidArgumentError(`${jobType} payload: ${mismatch.message}`);
  };
}

/**
 * The decoder of a job's stored payload: `JSON.parse`, then every string at
 * a {@link DatePath} becomes a `Date`, then the value is checked against the
 * job's shape (docs/semantics.md J12). A string that is not a valid date, or
 * a payload that no longer matches its type (the schema changed under queued
 * jobs), throws, so the worker fails the job as undecodable
 * (`PAYLOAD_DECODE`, the reason naming the path) instead of running the
 * handler with garbage; the worker goes on with the next job.
 */
export function payloadDecoder(jobType: string, spec: JobSpec): (json: string) => unknown {
  const paths = spec.datePaths ?? [];
  const shape = spec.payload;
  const named = spec.shapes ?? {};
  if (paths.length === 0 && shape === undefined) return (json) => JSON.parse(json);
  return (json) => {
    const value: unknown = JSON.parse(json);
    for (const path of paths) reviveAt(value, path, 0, jobType);
    if (shape !== undefined) {
      const mismatch = checkPayload(shape, value, named);
      if (mismatch !== null) throw new Error(`${mismatch.message} (the stored payload does not match the declared type)`);
    }
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
