/**
 * `createDashboard(options)`: the dashboard (docs/semantics.md, Dashboard) as a WHATWG Fetch
 * handler, `(request: Request) => Promise<Response>`, which Hono, Bun and
 * Deno mount as is; `toNodeHandler` adapts it to node:http, Express and
 * Fastify.
 *
 * Under `basePath` it serves:
 * - `GET {basePath}`: the page (`index.html`); `{basePath}` without its
 *   trailing slash redirects (308) there, so the page's relative links work;
 * - `GET {basePath}assets/<name>`: the page's script and style;
 * - `{basePath}api/...`: the JSON API (see `dashboard-routes.ts`).
 *
 * Safe by default: without `authorize` (and without an explicit
 * `readOnly: false`) the dashboard is read-only, so a dashboard mounted
 * with nothing but a backend lets whoever reaches it look, not retry or
 * delete. The overview says `readOnly`, and the page then draws no action
 * button.
 *
 * Security checks, in this order before anything is read:
 * 1. `authorize(request)`, when given, for every request: false is 403
 *    `FORBIDDEN`.
 * 2. An action (any method but GET, HEAD, OPTIONS) on a read-only
 *    dashboard: 403 `READ_ONLY`.
 * 3. An action a browser sent from another site (`Sec-Fetch-Site` present
 *    and not `same-origin`): 403 `FORBIDDEN`, unless `authorize` allowed
 *    the request. A request without the header (curl, a script: no
 *    browser, so no ambient cookies to abuse) passes.
 * Every response carries a strict Content-Security-Policy (nothing but the
 * page's own files, no inline script), `X-Content-Type-Options: nosniff`
 * and `X-Frame-Options: DENY`; the JSON is `Cache-Control: no-store`.
 */
import { LaterError } from "../errors.js";
import { prepareBackend } from "../backend/backend-preparation.js";
import { JobController } from "../publisher/job-controller.js";
import { OverviewSnapshot } from "./overview-snapshot.js";
import { resolveDashboardOptions, type DashboardOptions } from "./dashboard-options.js";
import { errorResponse, fileResponse, redirectResponse, responseForError } from "./dashboard-response.js";
import { isUnsafeMethod, routeApiRequest } from "./dashboard-routes.js";
import { dashboardAssets } from "./page-assets.js";

/** A WHATWG Fetch handler. */
export type DashboardHandler = (request: Request) => Promise<Response>;

/** Makes the dashboard's Fetch handler (see the module doc). Bad options throw `InvalidConfigError` here. */
export function createDashboard(options: DashboardOptions): DashboardHandler {
  const resolved = resolveDashboardOptions(options);
  const { backend, basePath, readOnly, authorize, onAction, onError, clock } = resolved;
  const snapshot = new OverviewSnapshot(backend, clock);
  // The job-action listener is for servers (waking workers); the audit event is sent by the action itself.
  const controller = new JobController(backend, clock, () => {});
  let opened: Promise<void> | null = null;
  const open = (): Promise<void> => {
    if (opened) return opened;
    const opening = prepareBackend(backend, false).catch((error: unknown) => {
      opened = null; // not kept: the next request tries again
      throw error;
    });
    opened = opening;
    return opening;
  };

  return async (request) => {
    try {
      const url = new URL(request.url);
      const method = request.method.toUpperCase();
      if (url.pathname === basePath.slice(0, -1) && basePath !== "/") return redirectResponse(`${basePath}${url.search}`);
      if (!url.pathname.startsWith(basePath)) return errorResponse(404, "NOT_FOUND", `not under the dashboard's base path ${basePath}`);
      const refusal = await securityRefusal(request, method, readOnly, authorize);
      if (refusal) return refusal;
      const rest = url.pathname.slice(basePath.length);
      if (rest === "" || rest === "index.html") return pageFile("index.html", method);
      if (rest.startsWith("assets/")) return pageFile(rest.slice("assets/".length), method);
      if (!rest.startsWith("api/")) return errorResponse(404, "NOT_FOUND", `no dashboard page ${rest}`);
      await open();
      return await routeApiRequest(method, rest.slice("api/".length), {
        backend,
        snapshot,
        controller,
        query: url.searchParams,
        now: () => clock.now(),
        onAction,
        readOnly,
      });
    } catch (error) {
      if (!(error instanceof LaterError)) {
        try {
          onError?.(error, request);
        } catch {
          // a failing logger does not change the answer
        }
      }
      return responseForError(error);
    }
  };
}

async function securityRefusal(
  request: Request,
  method: string,
  readOnly: boolean,
  authorize: ((request: Request) => boolean | Promise<boolean>) | undefined,
): Promise<Response | null> {
  const allowed = authorize ? (await authorize(request)) === true : undefined;
  if (allowed === false) return errorResponse(403, "FORBIDDEN", "not authorized to use this dashboard");
  if (!isUnsafeMethod(method)) return null;
  if (readOnly) return errorResponse(403, "READ_ONLY", "this dashboard is read-only: actions are turned off");
  const site = request.headers.get("sec-fetch-site");
  if (site !== null && site !== "same-origin" && allowed !== true) {
    return errorResponse(403, "FORBIDDEN", `refused an action sent from another site (Sec-Fetch-Site: ${site.slice(0, 20)}): use the dashboard's own page`);
  }
  return null;
}

function pageFile(name: string, method: string): Response {
  if (method !== "GET" && method !== "HEAD") {
    return errorResponse(405, "METHOD_NOT_ALLOWED", `${method} is not allowed on the page's files: use GET`, { allow: "GET, HEAD" });
  }
  const asset = Object.hasOwn(dashboardAssets, name) ? dashboardAssets[name] : undefined;
  if (!asset) return errorResponse(404, "NOT_FOUND", `no dashboard file ${name.slice(0, 60)}`);
  return fileResponse(asset.body, asset.contentType, method);
}
