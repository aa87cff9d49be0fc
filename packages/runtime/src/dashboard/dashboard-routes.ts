/**
 * The JSON API under `{basePath}api/` (docs/semantics.md D1–D5), as a route table:
 *
 * | method | path | answer |
 * | --- | --- | --- |
 * | GET | `overview` | D1 {@link Overview} and `readOnly`, one snapshot a second (D7), and `paused` (X4, read per request) |
 * | GET | `jobs?stage&type&topic&partition&q&limit&cursor` | D2 `{ jobs, nextCursor }` |
 * | GET | `jobs/{id}` | D3 {@link DashboardJobDetail} |
 * | POST | `jobs/{id}/retry` | D4, see `dashboard-actions.ts` |
 * | DELETE | `jobs/{id}` | D4 |
 * | POST | `jobs/{id}/cancel?reason` | D4, cancel (X3) |
 * | POST | `jobs/retry?stage&type`, `jobs/delete?stage&type`, `jobs/cancel?stage&type&reason` | D4 on every matching job |
 * | POST | `queues/{jobType}/pause`, `queues/{jobType}/resume`, `topics/{topic}/pause`, `topics/{topic}/resume` | X4, see `dashboard-pause.ts` |
 * | GET | `limits` | X9 `{ at, limits, complete }`: each limited job type's running against its limit, starts in the rate window, ready jobs held back, and with a `groupConcurrency` its busiest groups (from the overview's snapshot) |
 * | GET | `queue-length?since` | D5 `{ samples: [{ at, ready, partitionBacklog }] }`, one a minute |
 * | GET | `throughput?since` | per-second activity buckets, for the chart |
 *
 * A path that matches no route is 404 `NOT_FOUND`; one that matches with
 * another method is 405 `METHOD_NOT_ALLOWED` with an `Allow` header. A
 * literal segment wins over a parameter (`jobs/retry` is never job
 * "retry").
 */
import type { Backend } from "../backend/backend.js";
import { InvalidArgumentError, JobNotFoundError } from "../errors.js";
import type { JobController } from "../publisher/job-controller.js";
import { bulkAction, checkJobId, jobAction, type ActionContext } from "./dashboard-actions.js";
import { DETAIL_CHILDREN, jobDetail, jobListEntry } from "./dashboard-job-json.js";
import { pauseAction, pausedList } from "./dashboard-pause.js";
import { errorResponse, jsonResponse } from "./dashboard-response.js";
import { parseInteger, parseJobListQuery } from "./job-list-query.js";
import type { OverviewSnapshot } from "./overview-snapshot.js";

/** Queue-length samples are kept a week; `since` may reach that far. */
const QUEUE_LENGTH_MAX_AGE_MS = 7 * 24 * 3_600_000;
/** Default span of `queue-length`: the last 6 hours. */
const QUEUE_LENGTH_DEFAULT_MS = 6 * 3_600_000;
/** Default span of `throughput`: the last 5 minutes; at most an hour. */
const THROUGHPUT_DEFAULT_MS = 5 * 60_000;
const THROUGHPUT_MAX_AGE_MS = 3_600_000;

/** What a route handler gets. */
export interface RouteContext extends ActionContext {
  backend: Backend<unknown>;
  snapshot: OverviewSnapshot;
  controller: JobController;
  query: URLSearchParams;
  /** Whether actions are refused (see `DashboardOptions.readOnly`): the overview says so to the page. */
  readOnly: boolean;
  /** The `{name}` segments of the route, decoded. */
  params: Record<string, string>;
}

type Method = "GET" | "POST" | "DELETE";

interface Route {
  method: Method;
  /** Segments; `{name}` is a parameter. */
  path: string[];
  handle(context: RouteContext): Promise<Response> | Response;
}

const route = (method: Method, path: string, handle: Route["handle"]): Route => ({ method, path: path.split("/"), handle });

const ROUTES: Route[] = [
  // readOnly tells the page whether to draw the action buttons (the snapshot is shared; this is the dashboard's own).
  route("GET", "overview", async (c) => jsonResponse({ ...(await c.snapshot.get()), readOnly: c.readOnly, paused: await pausedList(c) })),
  route("GET", "jobs", async ({ backend, query }) => {
    const { afterId, ...filter } = parseJobListQuery(query);
    // One more than the page, to know whether there is a next one.
    const rows = await backend.inspect.jobList({ ...filter, order: "desc", afterId, limit: filter.limit + 1 });
    const page = rows.slice(0, filter.limit);
    return jsonResponse({ jobs: page.map(jobListEntry), nextCursor: rows.length > filter.limit ? (page.at(-1)?.id ?? null) : null });
  }),
  route("POST", "jobs/retry", (c) => bulkAction(c, "retry", c.query)),
  route("POST", "jobs/delete", (c) => bulkAction(c, "delete", c.query)),
  route("POST", "jobs/cancel", (c) => bulkAction(c, "cancel", c.query)),
  route("GET", "jobs/{id}", async ({ backend, params, now }) => {
    const id = params.id!;
    checkJobId(id);
    const inspect = backend.inspect;
    const job = await inspect.jobGet({ id });
    if (!job) throw new JobNotFoundError(id);
    const children = await inspect.jobChildren({ id, limit: DETAIL_CHILDREN });
    return jsonResponse(jobDetail(job, children, now()));
  }),
  route("DELETE", "jobs/{id}", (c) => jobAction(c, "delete", c.params.id!)),
  route("POST", "jobs/{id}/retry", (c) => jobAction(c, "retry", c.params.id!)),
  route("POST", "jobs/{id}/cancel", (c) => jobAction(c, "cancel", c.params.id!, c.query)),
  route("POST", "queues/{jobType}/pause", (c) => pauseAction(c, "pause", { jobType: c.params.jobType! })),
  route("POST", "queues/{jobType}/resume", (c) => pauseAction(c, "resume", { jobType: c.params.jobType! })),
  route("POST", "topics/{topic}/pause", (c) => pauseAction(c, "pause", { topic: c.params.topic! })),
  route("POST", "topics/{topic}/resume", (c) => pauseAction(c, "resume", { topic: c.params.topic! })),
  // The snapshot's limits: one read a second however many pages ask.
  route("GET", "limits", async ({ snapshot }) => {
    const overview = await snapshot.get();
    return jsonResponse({ at: overview.at, limits: overview.limits, complete: overview.limitsComplete });
  }),
  route("GET", "queue-length", async ({ backend, query, now }) => {
    const sinceMs = sinceParam(query, now(), QUEUE_LENGTH_DEFAULT_MS, QUEUE_LENGTH_MAX_AGE_MS);
    return jsonResponse({ stepS: 60, ...(await backend.inspect.queueLengthList({ sinceMs })) });
  }),
  route("GET", "throughput", async ({ backend, query, now }) => {
    const sinceMs = sinceParam(query, now(), THROUGHPUT_DEFAULT_MS, THROUGHPUT_MAX_AGE_MS);
    return jsonResponse({ stepS: 1, ...(await backend.inspect.activityList({ sinceMs })) });
  }),
];

/** `since` (ms since the epoch), default `now - defaultMs`, no earlier than `now - maxAgeMs`. */
function sinceParam(query: URLSearchParams, now: number, defaultMs: number, maxAgeMs: number): number {
  const since = query.get("since");
  if (since === null || since === "") return now - defaultMs;
  return Math.max(now - maxAgeMs, parseInteger("since", since, 0, Number.MAX_SAFE_INTEGER));
}

/** Answers an API request whose path (after `api/`) is `path`; `context` without `params`. */
export async function routeApiRequest(method: string, path: string, context: Omit<RouteContext, "params">): Promise<Response> {
  const segments = path.split("/");
  let matches: { route: Route; params: Record<string, string> }[] = [];
  let bestLiterals = -1;
  for (const r of ROUTES) {
    const params = matchPath(r.path, segments);
    if (!params) continue;
    const literals = r.path.filter((s) => !s.startsWith("{")).length;
    if (literals > bestLiterals) {
      bestLiterals = literals;
      matches = [];
    }
    if (literals === bestLiterals) matches.push({ route: r, params });
  }
  if (matches.length === 0) return errorResponse(404, "NOT_FOUND", `no dashboard API route ${path}`);
  const wanted = method === "HEAD" ? "GET" : method;
  const match = matches.find((m) => m.route.method === wanted);
  if (!match) {
    const allow = [...new Set(matches.map((m) => m.route.method))].join(", ");
    return errorResponse(405, "METHOD_NOT_ALLOWED", `${method} is not allowed on ${path}: use ${allow}`, { allow });
  }
  return match.route.handle({ ...context, params: match.params });
}

/** The route's parameters when `segments` fit its path, else null. */
function matchPath(pattern: readonly string[], segments: readonly string[]): Record<string, string> | null {
  if (pattern.length !== segments.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < pattern.length; i++) {
    const p = pattern[i]!;
    const s = segments[i]!;
    if (p.startsWith("{")) {
      if (s === "") return null;
      params[p.slice(1, -1)] = decodeSegment(s);
    } else if (p !== s) return null;
  }
  return params;
}

function decodeSegment(segment: string): string {
  try {
    return decodeURIComponent(segment);
  } catch {
    throw new InvalidArgumentError(`"${segment.slice(0, 40)}" is not valid percent-encoding`);
  }
}

/** Whether a method changes something (an action), for the security checks. */
export function isUnsafeMethod(method: string): boolean {
  return method !== "GET" && method !== "HEAD" && method !== "OPTIONS";
}
