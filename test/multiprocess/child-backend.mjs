// The backend a test child process opens, from the `backend` and `namespace` of its JSON config
// (the shape `test/conformance/backends.ts` hands children): PostgreSQL with a connection string and
// schema, or a SQLite file. `config.postgres` adds options of postgres() (applicationName, ...).
import { postgres } from "@later/runtime/postgres";
import { sqlite } from "@later/runtime/sqlite";

/** `config.backend.kind` "postgres" (connectionString, schema) or "sqlite" (file), in `config.namespace`. */
export function childBackend(config) {
  return config.backend.kind === "postgres"
    ? postgres({ connectionString: config.backend.connectionString, schema: config.backend.schema, namespace: config.namespace, ...config.postgres })
    : sqlite({ file: config.backend.file, namespace: config.namespace });
}
