import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    // The examples' own tests too (examples/testing shows the testing kit); vitest leaves node_modules out.
    include: ["test/**/*.test.ts", "examples/*/*.test.ts"],
    // Finds (or starts) PostgreSQL for the PostgreSQL suites; see the file.
    globalSetup: ["test/support/postgres-global-setup.ts"],
    // Fails a test that leaves a server running; see the file.
    setupFiles: ["test/support/leak-check.ts"],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    pool: "forks",
  },
});
