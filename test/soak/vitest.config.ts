/**
 * The soak test's own vitest config (`pnpm soak`, see soak.mjs): only
 * `*.soak.ts` files, which the main config (`*.test.ts`) never picks up, so
 * the normal suite does not run the soak. No global PostgreSQL set-up: the
 * soak starts a throwaway cluster of its own.
 */
import { fileURLToPath } from "node:url";
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    root: fileURLToPath(new URL("../..", import.meta.url)),
    include: ["test/soak/**/*.soak.ts"],
    pool: "forks",
    // Each test sets its own timeout from the run's length.
    hookTimeout: 60_000,
  },
});
