/**
 * SQLite under pressure (issue: reliability). The disk fills up — a small
 * tmpfs mounted by the test (as root), and SQLite's own `max_page_count`,
 * which gives `SQLITE_FULL` without a mount — and another process holds
 * the write lock for longer than `busyTimeoutMs`. In each case an enqueue
 * is refused with a typed error and stores nothing, a job that was running
 * keeps its stored state and its outcome is written once the database can
 * take it, the server stays up, and work resumes once the pressure ends.
 */
import { spawn } from "node:child_process";
import { execFileSync } from "node:child_process";
import { mkdirSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";
import Database from "better-sqlite3";
import { afterEach, describe, expect, it } from "vitest";
import { BackgroundJobServer, type LaterError, type ServerEvent } from "@later/runtime";
import { sqlite } from "@later/runtime/sqlite";
import { useProcesses, waitFor } from "./helpers.js";

const isRoot = process.getuid?.() === 0;
const big = "x".repeat(16_000);

interface Fixture {
  server: BackgroundJobServer<Record<string, never>>;
  /** Error events' codes, in order. */
  errors: string[];
  /** Payload tags of the jobs whose handler finished. */
  ran: string[];
  /** Lets the `hold` job's handler finish. */
  release: () => void;
  /** The `hold` job's id, once its handler runs. */
  held: Promise<string>;
}

async function startServer(options: Parameters<typeof sqlite>[0]): Promise<Fixture> {
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  let heldId!: (id: string) => void;
  const held = new Promise<string>((r) => (heldId = r));
  const errors: string[] = [];
  const ran: string[] = [];
  const server = await BackgroundJobServer.start({
    context: {},
    autoMigrate: true,
    pollIntervalMs: 20,
    workerCount: 2,
    backend: sqlite({ namespace: "pressure", ...options }),
    handlers: {
      work: {
        handle: async (ctx: { jobId: string }, p: { tag: string }) => {
          if (p.tag === "hold") {
            heldId(ctx.jobId);
            await gate;
          }
          ran.push(p.tag);
        },
      },
    },
    onEvent: (e: ServerEvent) => {
      if (e.type === "error") errors.push(e.code ?? e.error);
    },
  });
  return { server, errors, ran, release, held };
}

/** Jobs of the file and their stages, read on a connection of its own. */
function storedStages(file: string): Record<string, string> {
  const db = new Database(file, { readonly: true, fileMustExist: true });
  try {
    return Object.fromEntries((db.prepare("SELECT id, stage FROM later_jobs").all() as { id: string; stage: string }[]).map((r) => [r.id, r.stage]));
  } finally {
    db.close();
  }
}

/** Enqueues batches of large payloads until the database refuses one; returns the refusal. */
async function fillUp(f: Fixture): Promise<unknown> {
  for (let i = 0; i < 10_000; i++) {
    try {
      await f.server.publisher.enqueueMany(
        "work",
        Array.from({ length: 8 }, () => ({ tag: "filler", big })),
        { delayMs: 3_600_000 }, // never run: they only take room
      );
    } catch (error) {
      return error;
    }
  }
  throw new Error("the database never filled up");
}

/** The checks every kind of pressure shares, from the moment the database refuses writes until it takes them again. */
async function checkUnderPressure(
  f: Fixture,
  file: string,
  expectedCode: string,
  relieve: () => void | Promise<void>,
  /** The held job's outcome cannot be written until `relieve` (a held lock; a full disk may still have room in the WAL for it). */
  outcomeWaits = false,
): Promise<void> {
  const heldId = await f.held;
  // Refused with a typed error, and nothing of the refused batch stored.
  const before = storedStages(file);
  const refused = await f.server.publisher
    .enqueueMany(
      "work",
      Array.from({ length: 8 }, (_, i) => ({ tag: `refused-${i}`, big })),
    )
    .catch((e: LaterError) => e);
  expect((refused as LaterError).code).toBe(expectedCode);
  expect(storedStages(file)).toEqual(before);

  // The running job finishes in the meantime: its stored state stays "running" until its outcome can be written.
  f.release();
  await waitFor(() => f.ran.includes("hold"), "the held handler to finish");
  if (outcomeWaits) {
    await waitFor(() => f.errors.length > 0, "the outcome's write to be refused");
    expect(storedStages(file)[heldId]).toBe("running");
  } else expect(storedStages(file)[heldId]).toMatch(/^(running|success)$/);

  await relieve();
  // Work resumes: the held job's outcome is stored, and new jobs run.
  await waitFor(() => storedStages(file)[heldId] === "success", "the held job's outcome to be stored", 20_000);
  await f.server.publisher.enqueue("work", { tag: "after" });
  await waitFor(() => f.ran.includes("after"), "a job enqueued after the pressure to run", 20_000);
  expect(f.ran.filter((t) => t.startsWith("refused"))).toEqual([]);
  expect(f.errors.filter((c) => c !== expectedCode)).toEqual([]);
}

describe("SQLite under pressure", () => {
  const processes = useProcesses();
  const cleanups: (() => void | Promise<void>)[] = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  it.skipIf(!isRoot)("a full disk (a 2 MB tmpfs): enqueue refused with DATABASE_FULL, the running job's outcome written once space is freed", async () => {
    const mount = join(processes.tempDir(), "tmpfs");
    mkdirSync(mount);
    execFileSync("mount", ["-t", "tmpfs", "-o", "size=2m", "tmpfs", mount]);
    cleanups.push(() => void execFileSync("umount", ["-l", mount]));
    const filler = join(mount, "filler");
    writeFileSync(filler, Buffer.alloc(512 * 1024)); // freed later, to make room again
    const file = join(mount, "jobs.db");
    const f = await startServer({ file });
    cleanups.push(() => f.server.shutdown({ deadlineMs: 1_000 }));
    await f.server.publisher.enqueue("work", { tag: "hold" });
    await f.held;
    expect((await fillUp(f)) as LaterError).toMatchObject({ code: "DATABASE_FULL" });
    await checkUnderPressure(f, file, "DATABASE_FULL", () => rmSync(filler));
  });

  it("max_page_count reached: enqueue refused with DATABASE_FULL, work resumes once it is raised", async () => {
    const file = join(processes.tempDir(), "jobs.db");
    const database = new Database(file);
    cleanups.push(() => void database.close());
    const f = await startServer({ database });
    cleanups.push(() => f.server.shutdown({ deadlineMs: 1_000 }));
    await f.server.publisher.enqueue("work", { tag: "hold" });
    await f.held;
    database.pragma(`max_page_count = ${Number(database.pragma("page_count", { simple: true })) + 8}`);
    expect((await fillUp(f)) as LaterError).toMatchObject({ code: "DATABASE_FULL" });
    await checkUnderPressure(f, file, "DATABASE_FULL", () => void database.pragma("max_page_count = 1073741823"));
  });

  it("another process holds the write lock past busyTimeoutMs: enqueue refused with DATABASE_BUSY, nothing lost once it lets go", async () => {
    const file = join(processes.tempDir(), "jobs.db");
    const f = await startServer({ file, busyTimeoutMs: 100 });
    cleanups.push(() => f.server.shutdown({ deadlineMs: 1_000 }));
    await f.server.publisher.enqueue("work", { tag: "hold" });
    await f.held;
    // A process that takes the write lock, says so, and keeps it until its stdin closes.
    const holder = spawn(
      process.execPath,
      [
        "-e",
        `const db = new (require("better-sqlite3"))(${JSON.stringify(file)}); db.prepare("BEGIN IMMEDIATE").run(); console.log("locked");
         process.stdin.on("end", () => { db.prepare("COMMIT").run(); db.close(); console.log("unlocked"); }); process.stdin.resume();`,
      ],
      { stdio: ["pipe", "pipe", "inherit"] },
    );
    cleanups.push(() => void holder.kill("SIGKILL"));
    const lines = createInterface({ input: holder.stdout! });
    const said = (what: string) => new Promise<void>((resolve) => lines.on("line", (l) => l === what && resolve()));
    const locked = said("locked");
    const unlocked = said("unlocked");
    await locked;
    await checkUnderPressure(
      f,
      file,
      "DATABASE_BUSY",
      async () => {
        holder.stdin!.end();
        await unlocked;
      },
      true,
    );
  });
});
