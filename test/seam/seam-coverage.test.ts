/**
 * The seam suite's coverage guard: every method of `backend.jobs`,
 * `backend.partitions` and `backend.control` has a test in test/seam.
 *
 * How it works (the simplest approach that holds both ways):
 * - {@link METHODS} lists each store's methods by hand. The type checker
 *   (`pnpm typecheck`) proves the list equals the store interface's keys
 *   (`expectTypeOf` below): a method added to `JobStore`, `PartitionStore`
 *   or `JobControlStore` and not listed fails typecheck, and a name listed
 *   that the interface lacks does not compile.
 * - At run time, each listed name is a method of both backends' instances.
 *   (The instances' prototypes also hold dialect helpers, such as the SQLite
 *   job store's `insertRows`, that other stores reuse; they are not seam
 *   methods, which is why the interface, not the prototype, is the
 *   reference.)
 * - Each listed method has a test in its store's file: a `describe` whose
 *   title names the method, and a direct call `.<store>.<method>(` in the
 *   file. Test files run in isolated modules, so the guard reads their
 *   source rather than a registry filled at run time.
 */
import { readFileSync } from "node:fs";
import { describe, expect, expectTypeOf, it } from "vitest";
import type { JobControlStore, JobStore, PartitionStore } from "@later/runtime/internal";
import { postgres } from "@later/runtime/postgres";
import { sqlite } from "@later/runtime/sqlite";
import { BACKENDS } from "./seam-factory.js";

const JOBS = [
  "insertMany",
  "insertUniqueMany",
  "claimReady",
  "limitsSet",
  "limitsUngroupedAdopt",
  "finishMany",
  "releaseMany",
  "leaseRenew",
  "progressSet",
  "listStuck",
  "countReady",
  "deleteExpired",
  "readOutcomes",
] as const;
const PARTITIONS = [
  "topicRegister",
  "headClaim",
  "headFinish",
  "headRelease",
  "leaseRenew",
  "memberHeartbeat",
  "memberRemove",
  "headForceFail",
  "historyTruncate",
] as const;
const CONTROL = ["retryMany", "deleteMany", "cancelMany", "countMatching", "pauseSet", "pausedList", "pauseTargetKnown"] as const;

/** Each store: its methods, and the test file that covers it. */
const METHODS = {
  jobs: { methods: JOBS, file: "job-store.test.ts" },
  partitions: { methods: PARTITIONS, file: "partition-store.test.ts" },
  control: { methods: CONTROL, file: "job-control-store.test.ts" },
} as const;

type Store = keyof typeof METHODS;

describe("seam suite coverage", () => {
  it("the hand-kept lists equal the store interfaces' methods (checked by the type checker)", () => {
    expectTypeOf<(typeof JOBS)[number]>().toEqualTypeOf<keyof JobStore>();
    expectTypeOf<(typeof PARTITIONS)[number]>().toEqualTypeOf<keyof PartitionStore>();
    expectTypeOf<(typeof CONTROL)[number]>().toEqualTypeOf<keyof JobControlStore>();
    expect(JOBS.length + PARTITIONS.length + CONTROL.length).toBe(29);
  });

  it.each(BACKENDS)("every listed method is a method of the $name backend's stores", (entry) => {
    // Only the instance is read: nothing is opened, so no database is needed.
    const backend = entry.name === "sqlite" ? sqliteInstance() : postgresInstance();
    for (const store of Object.keys(METHODS) as Store[]) {
      const instance = backend[store] as unknown as Record<string, unknown>;
      const missing = METHODS[store].methods.filter((m) => typeof instance[m] !== "function");
      expect(missing, `${entry.name} ${store}`).toEqual([]);
    }
  });

  it("every method has a test in its store's file: a describe naming it and a direct call", () => {
    const uncovered: string[] = [];
    for (const store of Object.keys(METHODS) as Store[]) {
      const { methods, file } = METHODS[store];
      const source = readFileSync(new URL(file, import.meta.url), "utf8");
      const titles = [...source.matchAll(/describe\(\s*"([^"]+)"/g)].map((m) => m[1]!);
      for (const method of methods) {
        const named = titles.some((t) => new RegExp(`\\b${method}\\b`).test(t));
        const called = new RegExp(`\\.${store}\\.${method}\\(`).test(source);
        if (!named || !called)
          uncovered.push(
            `${store}.${method} (${file}: ${named ? "" : "no describe naming it"}${!named && !called ? ", " : ""}${called ? "" : "no direct call"})`,
          );
      }
    }
    expect(uncovered).toEqual([]);
  });
});

/** A backend instance never opened (its stores exist from construction). */
function sqliteInstance() {
  return sqlite({ file: "/nonexistent/never-opened.db", namespace: "coverage" });
}

function postgresInstance() {
  return postgres({ connectionString: "postgres://127.0.0.1:1/never-opened", namespace: "coverage" });
}
