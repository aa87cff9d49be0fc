/**
 * D2 `GET api/jobs?stage&type&topic&partition&q&limit&cursor`: the query
 * string checked into list params. Newest first (ids are ULIDs, so this is
 * creation order); `cursor` is the `nextCursor` of the page before (the
 * last id it showed), so a page costs the page however deep the backlog.
 * A bad parameter is `InvalidArgumentError` (400), nothing read.
 */
import { isJobId, type JobId } from "../core/job-id.js";
import { JOB_STAGES, type JobStage } from "../core/job-stage.js";
import { InvalidArgumentError } from "../errors.js";

/** Jobs per page by default. */
export const DEFAULT_PAGE = 50;
/** Most jobs a page may ask for. */
export const MAX_PAGE = 500;
/** Longest `q` accepted. */
const MAX_SEARCH = 100;

/** The checked query of a list page. */
export interface JobListQuery {
  stage?: JobStage;
  jobType?: string;
  topic?: string;
  partition?: number;
  /** Id prefix or job-type prefix. */
  q?: string;
  limit: number;
  afterId?: JobId;
}

export function parseJobListQuery(query: URLSearchParams): JobListQuery {
  const known = new Set(["stage", "type", "topic", "partition", "q", "limit", "cursor"]);
  for (const name of query.keys()) {
    if (!known.has(name)) throw new InvalidArgumentError(`unknown parameter "${name.slice(0, 40)}": the job list takes ${[...known].join(", ")}`);
  }
  const result: JobListQuery = { limit: DEFAULT_PAGE };
  const stage = nonEmpty(query, "stage");
  if (stage !== undefined) result.stage = parseStage(stage);
  const type = nonEmpty(query, "type");
  if (type !== undefined) result.jobType = type;
  const topic = nonEmpty(query, "topic");
  if (topic !== undefined) result.topic = topic;
  const partition = nonEmpty(query, "partition");
  if (partition !== undefined) {
    if (topic === undefined) throw new InvalidArgumentError("partition needs topic: a partition number means something only within its topic");
    result.partition = parseInteger("partition", partition, 0, Number.MAX_SAFE_INTEGER);
  }
  const q = nonEmpty(query, "q");
  if (q !== undefined) {
    if (q.length > MAX_SEARCH) throw new InvalidArgumentError(`q is at most ${MAX_SEARCH} characters, got ${q.length}`);
    result.q = q;
  }
  const limit = nonEmpty(query, "limit");
  if (limit !== undefined) result.limit = parseInteger("limit", limit, 1, MAX_PAGE);
  const cursor = nonEmpty(query, "cursor");
  if (cursor !== undefined) {
    if (!isJobId(cursor)) throw new InvalidArgumentError("cursor must be the nextCursor of a page (a job id)");
    result.afterId = cursor;
  }
  return result;
}

/** A stage name, else `InvalidArgumentError` naming the stages. */
export function parseStage(value: string): JobStage {
  if (!(JOB_STAGES as readonly string[]).includes(value)) {
    throw new InvalidArgumentError(`stage "${value.slice(0, 40)}" is not a stage: ${JOB_STAGES.join(", ")}`);
  }
  return value as JobStage;
}

/** An integer parameter from `min` to `max`, else `InvalidArgumentError`. */
export function parseInteger(name: string, value: string, min: number, max: number): number {
  const n = Number(value);
  if (!/^-?\d+$/.test(value) || !Number.isSafeInteger(n) || n < min || n > max) {
    throw new InvalidArgumentError(`${name} must be an integer from ${min} to ${max}, got "${value.slice(0, 40)}"`);
  }
  return n;
}

function nonEmpty(query: URLSearchParams, name: string): string | undefined {
  const all = query.getAll(name);
  if (all.length > 1) throw new InvalidArgumentError(`${name} is given ${all.length} times: give it once`);
  const value = all[0];
  return value === undefined || value === "" ? undefined : value;
}
