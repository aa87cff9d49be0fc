/**
 * The dashboard page (docs/semantics.md D6). One state, two views chosen by the
 * URL's hash (`#/?stage=failed&type=...` the overview and the job list,
 * `#/jobs/<id>` one job), so links and the back button work under any base
 * path; every request is relative to the page. The {@link Poller} redraws
 * the view from fresh responses.
 */
import {
  type ActivityBucket,
  ApiError,
  api,
  filterParams,
  type JobFilter,
  type JobPage,
  type Overview,
  type PauseTargetJson,
  type QueueLength,
  FILTER_STAGES,
  type Stage,
} from "./api-client.js";
import { formatTime, shortId } from "./display-format.js";
import { h } from "./element.js";
import { jobDetailView } from "./job-detail-view.js";
import { JobListView } from "./job-list-view.js";
import { databaseSize, queueLengthPanel, stageCards, throughputPanel, topicsPanel, unhandledPanel, workersPanel } from "./overview-view.js";
import { pausedPanel } from "./paused-view.js";
import { limitsPanel } from "./limits-view.js";
import { POLL_INTERVALS, Poller } from "./poller.js";

/** Jobs per list page. */
const PAGE_SIZE = 25;
/** The queue-length samples are per minute: fetched again at most this often. */
const QUEUE_LENGTH_REFRESH_MS = 30_000;
const QUEUE_RANGES: readonly { label: string; ms: number }[] = [
  { label: "1 h", ms: 3_600_000 },
  { label: "6 h", ms: 21_600_000 },
  { label: "24 h", ms: 86_400_000 },
  { label: "7 d", ms: 604_800_000 },
];
const STORAGE_KEY = "later.dashboard.pollMs";

type Route = { kind: "list"; filter: JobFilter } | { kind: "job"; id: string };

const state = {
  filter: {} as JobFilter,
  /** cursors[i] fetches page i (cursors[0] is null, the first page). */
  cursors: [null] as (string | null)[],
  pageIndex: 0,
  /** Bumped when the filter or the page changes: a list response for an older one is not drawn. */
  listVersion: 0,
  overview: null as Overview | null,
  queueLength: null as QueueLength | null,
  /** Per-second activity of the last minute, for the throughput chart. */
  throughput: null as ActivityBucket[] | null,
  queueLengthFetchedAt: 0,
  queueRangeMs: 21_600_000,
};

function parseRoute(hash: string): Route {
  const path = hash.replace(/^#/, "");
  const job = /^\/jobs\/([^/?]+)$/.exec(path);
  if (job) return { kind: "job", id: decodeURIComponent(job[1]!) };
  const query = new URLSearchParams(path.includes("?") ? path.slice(path.indexOf("?") + 1) : "");
  const filter: JobFilter = {};
  const stage = query.get("stage");
  if (stage && (FILTER_STAGES as readonly string[]).includes(stage)) filter.stage = stage as Stage;
  for (const key of ["type", "topic", "q"] as const) {
    const value = query.get(key);
    if (value) filter[key] = value;
  }
  const partition = query.get("partition");
  if (filter.topic && partition && /^\d+$/.test(partition)) filter.partition = Number(partition);
  return { kind: "list", filter };
}

function listHash(filter: JobFilter): string {
  const query = filterParams(filter).toString();
  return query ? `#/?${query}` : "#/";
}

// ---- the shell ----
const status = h("span", { className: "status", attrs: { role: "status" } }, "loading…");
const dbSize = h("span", { className: "db-size" });
const flash = h("div", { className: "flash", attrs: { "aria-live": "polite" } });
const pollSelect = h(
  "select",
  { attrs: { name: "poll", "aria-label": "Refresh interval" } },
  ...POLL_INTERVALS.map((ms) => h("option", { attrs: { value: ms === null ? "paused" : String(ms) } }, ms === null ? "paused" : `every ${ms / 1_000} s`)),
);
const refreshButton = h("button", { attrs: { type: "button", title: "Refresh now" }, onClick: () => void poller.refresh() }, "↻");
const cards = h("div", { className: "cards-slot" });
const charts = h("div", { className: "row" });
/** The right column beside the throughput panel: queue length, topics, workers. */
const side = h("div", { className: "stack" });
const detail = h("div", { className: "detail-slot" });
const queueRange = h(
  "select",
  { className: "inline-select", attrs: { name: "queue-range", "aria-label": "Queue length range" } },
  ...QUEUE_RANGES.map((r) => h("option", { attrs: { value: String(r.ms) } }, r.label)),
);
queueRange.value = String(state.queueRangeMs);
queueRange.addEventListener("change", () => {
  state.queueRangeMs = Number(queueRange.value);
  state.queueLengthFetchedAt = 0;
  void poller.refresh();
});

/** Read-only until an overview says otherwise: no action button is drawn before the page knows it may act. */
const readOnly = () => state.overview?.readOnly !== false;
const jobList = new JobListView({
  setFilter: (filter) => navigate(listHash(filter)),
  firstPage: () => goToPage(0),
  previousPage: () => goToPage(Math.max(0, state.pageIndex - 1)),
  nextPage: () => goToPage(state.pageIndex + 1),
  bulk: (action) => void bulkAction(action),
});
const overviewActions = { filter: (change: Partial<JobFilter>) => navigate(listHash({ ...state.filter, ...change })) };
const pauseActions = {
  ...overviewActions,
  pause: (t: PauseTargetJson) => void pauseAction("pause", t),
  resume: (t: PauseTargetJson) => void pauseAction("resume", t),
};

document
  .getElementById("app")!
  .replaceChildren(
    h(
      "header",
      null,
      h("h1", null, h("a", { href: "#/", className: "brand" }, "later")),
      dbSize,
      h("span", { className: "spacer" }),
      status,
      refreshButton,
      pollSelect,
    ),
    flash,
    h("main", null, cards, detail, charts, jobList.root),
  );

function storedInterval(): number | null {
  try {
    const stored = localStorage.getItem(STORAGE_KEY);
    if (stored === "paused") return null;
    const ms = Number(stored);
    if (POLL_INTERVALS.includes(ms)) return ms;
  } catch {
    // storage blocked: the default
  }
  return 2_000;
}

const poller = new Poller(poll, storedInterval());
pollSelect.value = poller.interval === null ? "paused" : String(poller.interval);
pollSelect.addEventListener("change", () => {
  const ms = pollSelect.value === "paused" ? null : Number(pollSelect.value);
  try {
    localStorage.setItem(STORAGE_KEY, pollSelect.value);
  } catch {
    // storage blocked: kept for this page only
  }
  poller.setInterval(ms);
});

// ---- navigation ----
function navigate(hash: string): void {
  if (location.hash === hash || (hash === "#/" && location.hash === "")) void poller.refresh();
  else location.hash = hash; // hashchange polls
}

function goToPage(index: number): void {
  if (index >= state.cursors.length) return;
  state.pageIndex = index;
  state.listVersion++;
  void poller.refresh();
}

window.addEventListener("hashchange", () => {
  onRoute();
  void poller.refresh();
});

function onRoute(): void {
  const route = parseRoute(location.hash);
  if (route.kind === "list") {
    if (filterParams(route.filter).toString() !== filterParams(state.filter).toString()) {
      state.filter = route.filter;
      state.cursors = [null];
      state.pageIndex = 0;
      state.listVersion++;
    }
    jobList.showFilter(state.filter, state.overview?.topics ?? []);
  }
  const onList = route.kind === "list";
  charts.hidden = !onList;
  jobList.root.hidden = !onList;
  detail.hidden = onList;
  if (onList) detail.replaceChildren();
  else detail.replaceChildren(h("p", { className: "note" }, "loading…"));
}

// ---- polling ----
async function poll(): Promise<void> {
  const route = parseRoute(location.hash);
  const now = Date.now();
  const onList = route.kind === "list";
  const wantQueueLength = onList && now - state.queueLengthFetchedAt >= QUEUE_LENGTH_REFRESH_MS;
  // `since` by the server's clock (the last overview's time), so a browser clock that is off does not matter.
  const serverNow = state.overview?.at ?? now;
  const pageIndex = state.pageIndex;
  const listVersion = state.listVersion;
  const [overview, view, queueLength, throughput] = await Promise.allSettled([
    api.overview(),
    onList ? api.jobs(state.filter, PAGE_SIZE, state.cursors[pageIndex] ?? null) : api.job(route.id),
    wantQueueLength ? api.queueLength(serverNow - state.queueRangeMs) : Promise.resolve(null),
    onList ? api.throughput(serverNow - 65_000) : Promise.resolve(null),
  ]);
  if (parseRoute(location.hash).kind !== route.kind) return; // navigated meanwhile: the next poll draws
  const errors: string[] = [];
  if (overview.status === "fulfilled") state.overview = overview.value;
  else errors.push(`overview: ${messageOf(overview.reason)}`);
  if (queueLength.status === "fulfilled" && queueLength.value) {
    state.queueLength = queueLength.value;
    state.queueLengthFetchedAt = now;
  } else if (queueLength.status === "rejected") errors.push(`queue length: ${messageOf(queueLength.reason)}`);
  if (throughput.status === "fulfilled" && throughput.value) state.throughput = throughput.value.buckets;
  else if (throughput.status === "rejected") errors.push(`throughput: ${messageOf(throughput.reason)}`);
  drawOverview();
  if (route.kind === "list") {
    if (listVersion !== state.listVersion) {
      // the filter or page changed meanwhile: the poll that follows draws it
    } else if (view.status === "fulfilled") {
      const page = view.value as JobPage;
      state.cursors.length = pageIndex + 1;
      if (page.nextCursor !== null) state.cursors.push(page.nextCursor);
      jobList.showPage(page, pageIndex, Date.now());
    } else errors.push(`jobs: ${messageOf(view.reason)}`);
  } else if (view.status === "fulfilled") {
    detail.replaceChildren(
      jobDetailView(view.value as never, Date.now(), readOnly(), {
        backHref: listHash(state.filter),
        retry: (id) => void retryJob(id),
        remove: (id) => void deleteJob(id),
        cancel: (id) => void cancelJob(id),
      }),
    );
  } else if (view.reason instanceof ApiError && view.reason.status === 404) {
    detail.replaceChildren(
      h(
        "section",
        { className: "panel job-detail" },
        h("p", null, h("a", { href: "#/", className: "back" }, "‹ all jobs")),
        h("p", { className: "note" }, `No job ${route.id} (deleted, or expired after it finished).`),
      ),
    );
  } else errors.push(`job: ${messageOf(view.reason)}`);
  // Polls done, a test signal (page tests wait on it instead of on time).
  status.dataset.polls = String(Number(status.dataset.polls ?? 0) + 1);
  status.className = errors.length === 0 ? "status" : "status error";
  status.textContent = errors.length === 0 ? `updated ${formatTime(Date.now())}` : errors.join(" · ");
}

function drawOverview(): void {
  const overview = state.overview;
  if (!overview) return;
  const now = overview.at ?? Date.now();
  const unhandled = unhandledPanel(overview, overviewActions);
  const paused = pausedPanel(overview, state.filter, readOnly(), pauseActions);
  const limits = limitsPanel(overview, overviewActions);
  cards.replaceChildren(...(unhandled ? [unhandled] : []), ...(paused ? [paused] : []), stageCards(overview, state.filter, overviewActions));
  dbSize.replaceChildren(databaseSize(overview));
  side.replaceChildren(
    queueLengthPanel(state.queueLength, state.queueRangeMs, now, queueRange),
    topicsPanel(overview, state.filter, overviewActions),
    ...(limits ? [limits] : []),
    workersPanel(overview, now),
  );
  charts.replaceChildren(throughputPanel(overview, state.throughput), side);
  jobList.showFilter(state.filter, overview.topics);
  jobList.showActions(readOnly());
}

function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

// ---- actions ----
function showFlash(text: string, isError = false): void {
  flash.className = isError ? "flash error" : "flash";
  flash.textContent = text;
}

async function act(what: string, run: () => Promise<unknown>, done: () => string): Promise<void> {
  try {
    await run();
    showFlash(done());
  } catch (error) {
    showFlash(`${what} failed: ${messageOf(error)}`, true);
  }
  await poller.refresh();
}

async function retryJob(id: string): Promise<void> {
  if (!window.confirm(`Retry job ${id}?`)) return;
  await act(
    "Retry",
    () => api.retryJob(id),
    () => `Job …${shortId(id)} retried.`,
  );
}

async function deleteJob(id: string): Promise<void> {
  if (!window.confirm(`Delete job ${id}? This cannot be undone.`)) return;
  await act(
    "Delete",
    async () => {
      await api.deleteJob(id);
      navigate(listHash(state.filter));
    },
    () => `Job …${shortId(id)} deleted.`,
  );
}

async function cancelJob(id: string): Promise<void> {
  if (!window.confirm(`Cancel job ${id}? It ends cancelled now; a running attempt is aborted.`)) return;
  let count: number | undefined;
  await act(
    "Cancel",
    async () => {
      count = (await api.cancelJob(id))?.count;
    },
    () => (count === 0 ? `Job …${shortId(id)} had finished already: nothing changed.` : `Job …${shortId(id)} cancelled.`),
  );
}

/** How each bulk action is named, and which jobs it takes. */
const BULK = {
  retry: { verb: "Retry", applies: "failed or cancelled", done: "retried" },
  delete: { verb: "Delete", applies: "finished (success, failed or cancelled)", done: "deleted" },
  cancel: { verb: "Cancel", applies: "unfinished", done: "cancelled" },
} as const;

async function bulkAction(action: "retry" | "delete" | "cancel"): Promise<void> {
  const filter = { stage: state.filter.stage, type: state.filter.type };
  const described = filterParams(filter).toString().replaceAll("&", ", ") || "no filter: every job";
  const b = BULK[action];
  if (!window.confirm(`${b.verb} every ${b.applies} job matching the filter (${described})?`)) return;
  let count: number | undefined;
  await act(
    b.verb,
    async () => {
      count = (await api.bulk(action, filter))?.count;
      state.cursors = [null];
      state.pageIndex = 0;
      state.listVersion++;
    },
    () => `${count ?? "The matching"} job${count === 1 ? "" : "s"} ${b.done}.`,
  );
}

/** X4: pause or resume a job type or topic, after a confirmation. */
async function pauseAction(action: "pause" | "resume", target: PauseTargetJson): Promise<void> {
  const what = "jobType" in target ? `job type ${target.jobType}` : `topic ${target.topic}`;
  const consequence =
    action === "pause"
      ? "No server starts a new job of it until it is resumed; running jobs finish, enqueue goes on."
      : "Servers start its jobs again at once.";
  if (!window.confirm(`${action === "pause" ? "Pause" : "Resume"} ${what}? ${consequence}`)) return;
  let changed: boolean | undefined;
  await act(
    action === "pause" ? "Pause" : "Resume",
    async () => {
      changed = (await api.pause(action, target)).changed;
    },
    () => (changed === false ? `${what} was already ${action === "pause" ? "paused" : "running"}.` : `${what} ${action === "pause" ? "paused" : "resumed"}.`),
  );
}

onRoute();
void poller.refresh();
