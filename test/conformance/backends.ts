/**
 * The backend list every conformance test runs against. Each entry makes a
 * fresh, empty database per call; `backend(namespace)` opens another
 * backend on that same database (to test sharing and isolation).
 * The PostgreSQL backend is added here as one more factory.
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sqlite, type Backend } from "@later/runtime";

export interface TestDatabase {
  backend(namespace?: string): Backend;
  /** Location, for tests that open the database themselves (SQLite: the file). */
  readonly location: string;
  dispose(): Promise<void>;
}

export interface BackendEntry {
  name: string;
  createDatabase(): Promise<TestDatabase>;
}

export const BACKENDS: BackendEntry[] = [
  {
    name: "sqlite",
    async createDatabase() {
      const dir = mkdtempSync(join(tmpdir(), "later-conformance-"));
      const file = join(dir, "jobs.db");
      return {
        location: file,
        backend: (namespace = "test") => sqlite({ file, namespace }),
        dispose: async () => rmSync(dir, { recursive: true, force: true }),
      };
    },
  },
];
