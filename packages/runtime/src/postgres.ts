/**
 * `@later/runtime/postgres`: the PostgreSQL backend. Needs the application
 * to install `pg` (an optional peer dependency); the root entry never loads
 * it.
 */
export {
  postgres,
  PostgresBackend,
  type PostgresBackendOptions,
  type PostgresBackendWarning,
  type PostgresClient,
  type PostgresPool,
  type PostgresTransaction,
} from "./backend/postgres/postgres-backend.js";
