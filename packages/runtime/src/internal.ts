/**
 * `@later/runtime/internal`: the database seam (`Backend`, its stores by
 * subsystem, their params and results; see `backend/backend.ts`) and
 * `prepareBackend`, for `@later/cli` and this repository's tests and
 * benchmarks.
 *
 * NOT a stable API: anything here may change in any release, patch releases
 * included, without notice. Applications use `@later/runtime` and the
 * backend factories (`@later/runtime/sqlite`, `@later/runtime/postgres`);
 * nothing outside this repository should implement `Backend`.
 */
export type * from "./backend/backend.js";
export { prepareBackend } from "./backend/backend-preparation.js";
export { JobController } from "./publisher/job-controller.js";
export { CANCELLABLE_STAGES, RETRYABLE_STAGES, TERMINAL_STAGES } from "./core/job-stage.js";
export { PauseController } from "./publisher/pause-controller.js";
export { storedRetryPolicy } from "./core/retry/retry-policy.js";
export { parseDatabaseUrl, displayDatabaseUrl, DATABASE_URL_FORMS, type DatabaseUrl } from "./backend/database-url.js";
