/**
 * `@later/runtime/dashboard`: the dashboard (docs/semantics.md, Dashboard) as a Fetch
 * handler, `createDashboard({ backend, basePath, readOnly, authorize,
 * onAction, clock })`, and `toNodeHandler` for node:http, Express and
 * Fastify. Loads no database driver: it gets the backend it shows.
 */
export { createDashboard, type DashboardHandler } from "./create-dashboard.js";
export { toNodeHandler, type NodeRequestListener } from "./node-handler.js";
export type { DashboardOptions, DashboardActionEvent } from "./dashboard-options.js";
export type { Overview, OverviewTopic, DispatchWait, OverviewStage } from "./overview-snapshot.js";
export type { DashboardJobListEntry, DashboardJobDetail, JobDurations } from "./dashboard-job-json.js";
export { CONTENT_SECURITY_POLICY } from "./dashboard-response.js";
