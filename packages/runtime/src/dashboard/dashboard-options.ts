import type { Backend } from "../backend/backend.js";
import { systemClock, type Clock } from "../core/clock.js";
import type { JobId } from "../core/job-id.js";
import type { JobStage } from "../core/job-stage.js";
import { describeValue, InvalidConfigError } from "../errors.js";

/** What {@link createDashboard} takes. */
export interface DashboardOptions {
  /**
   * The database the dashboard reads and acts on: a backend (`sqlite({ file })`,
   * `postgres({ connectionString })`, `backendFromUrl(url)`, or a server's
   * `server.backend`), not a server. The dashboard opens it on the first
   * request of the API (`open()` is idempotent) and never closes it: the
   * caller does. Its later schema must be current: one behind or ahead is
   * answered 503 `SCHEMA_VERSION_MISMATCH` saying to run `later migrate up`
   * (checked once, at that first request).
   */
  backend: Backend<unknown>;
  /**
   * The path the dashboard is mounted at, with a leading and a trailing
   * slash (a missing trailing slash is added): the page is `GET {basePath}`,
   * its files `{basePath}assets/<name>`, the JSON API `{basePath}api/...`.
   * It must be the full path the request's URL carries: mounted in Express
   * with `app.use("/jobs", toNodeHandler(dashboard))`, it is `"/jobs/"`
   * (`toNodeHandler` reads Express's `originalUrl`). Default `"/"`.
   */
  basePath?: string | undefined;
  /**
   * Refuse every action (retry, delete, ...) with 403 `READ_ONLY`, whatever
   * `authorize` says, and draw no action button on the page: a dashboard to
   * look at, not to act.
   *
   * Default: read-only unless `authorize` is given (safe by default: a
   * dashboard mounted with nothing but a backend cannot change jobs).
   * `readOnly: false` without `authorize` turns the actions on for anyone
   * who can reach the route (only the same-origin rule for browsers
   * remains): do it only behind something that authenticates, such as a
   * proxy or the host's own middleware.
   */
  readOnly?: boolean | undefined;
  /**
   * The host's own check, called for every request (the page, its files,
   * reads and actions) before anything is read: false is 403 `FORBIDDEN`.
   * When given, its `true` also allows an action that a browser sent
   * cross-site (`Sec-Fetch-Site` other than `same-origin`), which the
   * default refuses: a hook that authenticates by cookie must then refuse
   * cross-site unsafe requests itself (check `Sec-Fetch-Site`, or a token
   * in a header). A throw is answered 500, nothing done. Giving it turns
   * the actions on (unless `readOnly: true`). Default: none (every read
   * allowed, and read-only unless `readOnly: false`).
   */
  authorize?: ((request: Request) => boolean | Promise<boolean>) | undefined;
  /**
   * Called once after each action that changed something or was accepted
   * (an audit trail: who did what is the host's, from the request it
   * authorized). A throw is ignored: the action is done. Default: none.
   */
  onAction?: ((event: DashboardActionEvent) => void) | undefined;
  /**
   * Called with an unexpected error (one answered 500 `INTERNAL`, whose
   * message the response does not show): log it. `LaterError`s (bad
   * parameters, refusals, an unavailable database) are answered with their
   * code and message and not reported here. A throw is ignored. Default:
   * none.
   */
  onError?: ((error: unknown, request: Request) => void) | undefined;
  /**
   * Time for the overview snapshot's age, the throughput window and an
   * action's `at`. Default: the wall clock.
   */
  clock?: Clock | undefined;
}

/** One action taken through the dashboard, for {@link DashboardOptions.onAction}. */
export interface DashboardActionEvent {
  /** `"retry"` or `"delete"`; `"pause"` or `"resume"` of a job type or topic (X4). */
  action: "retry" | "delete" | "pause" | "resume";
  /** The job type or topic paused or resumed. */
  target?: { jobType: string } | { topic: string } | undefined;
  /** The job, for an action on one job. */
  jobIds?: JobId[] | undefined;
  /** The list's filter, for an action on every matching job. */
  filter?: { stage?: JobStage | undefined; jobType?: string | undefined } | undefined;
  /** How many jobs changed. */
  count: number;
  /** When it was done, ms since the epoch (the dashboard's clock). */
  at: number;
}

/** The options with their defaults, checked. */
export interface ResolvedDashboardOptions {
  backend: Backend<unknown>;
  basePath: string;
  readOnly: boolean;
  authorize: ((request: Request) => boolean | Promise<boolean>) | undefined;
  onAction: ((event: DashboardActionEvent) => void) | undefined;
  onError: ((error: unknown, request: Request) => void) | undefined;
  clock: Clock;
}

/** Checks the options (a bad one is `InvalidConfigError` at once, nothing served) and applies the defaults. */
export function resolveDashboardOptions(options: DashboardOptions): ResolvedDashboardOptions {
  if (options === null || typeof options !== "object")
    throw new InvalidConfigError(`createDashboard: options must be an object, got ${describeValue(options)}`);
  const { backend, authorize, onAction, onError, clock = systemClock } = options;
  // Safe by default: actions only with an authorize hook, or when asked for in so many words.
  const readOnly = options.readOnly ?? authorize === undefined;
  if (backend === null || typeof backend !== "object" || typeof backend.inspect !== "object" || typeof backend.open !== "function") {
    throw new InvalidConfigError(
      `createDashboard: backend must be a later backend (sqlite(...), postgres(...), server.backend), got ${describeValue(backend)}`,
    );
  }
  if (typeof readOnly !== "boolean") throw new InvalidConfigError(`createDashboard: readOnly must be a boolean, got ${describeValue(readOnly)}`);
  for (const [name, value] of [
    ["authorize", authorize],
    ["onAction", onAction],
    ["onError", onError],
  ] as const) {
    if (value !== undefined && typeof value !== "function")
      throw new InvalidConfigError(`createDashboard: ${name} must be a function, got ${describeValue(value)}`);
  }
  if (clock === null || typeof clock !== "object" || typeof clock.now !== "function") {
    throw new InvalidConfigError(`createDashboard: clock must be a Clock ({ now, sleep }), got ${describeValue(clock)}`);
  }
  return { backend, basePath: checkBasePath(options.basePath ?? "/"), readOnly, authorize, onAction, onError, clock };
}

function checkBasePath(basePath: unknown): string {
  if (typeof basePath !== "string" || !basePath.startsWith("/") || /[?#\s]/.test(basePath) || basePath.includes("//")) {
    throw new InvalidConfigError(
      `createDashboard: basePath must be a path starting with "/" (e.g. "/jobs/"), without "?", "#", spaces or "//", got ${describeValue(basePath)}`,
    );
  }
  return basePath.endsWith("/") ? basePath : `${basePath}/`;
}
