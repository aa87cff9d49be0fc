/**
 * `later jobs pause|resume|paused` (X4) run as a child process on a real
 * SQLite file: a job type known from its stored jobs, a registered topic,
 * idempotence, the typed refusals (exit 1, nothing written) and bad usage
 * (exit 2).
 */
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { sqlite } from "@later/runtime/sqlite";
import { later, seedDatabase, tempDir } from "./later-cli.js";

describe("later jobs pause|resume|paused (sqlite)", () => {
  const dir = tempDir();

  it("pauses and resumes a job type or topic, lists them, refuses unknown names and bad usage", async () => {
    const file = join(dir, "pause.db");
    await seedDatabase(file);
    const backend = sqlite({ file, namespace: "default" });
    await backend.open();
    try {
      await backend.partitions.topicRegister({ topics: [{ name: "ledger", partitions: 2 }], now: Date.now() });
    } finally {
      await backend.close();
    }
    const db = ["--database", `sqlite:${file}`];
    expect(later(["jobs", "paused", ...db])).toMatchObject({ status: 0, stdout: 'nothing is paused in namespace "default"\n' });
    expect(later(["jobs", "pause", "--type", "sendEmail", ...db])).toMatchObject({
      status: 0,
      stdout: 'paused job type sendEmail in namespace "default": servers start no new job of it within their poll interval\n',
    });
    expect(later(["jobs", "pause", "--type", "sendEmail", ...db]).stdout).toBe('job type sendEmail in namespace "default" was already paused\n');
    expect(JSON.parse(later(["jobs", "pause", "--topic", "ledger", ...db, "--json"]).stdout)).toEqual({ action: "pause", topic: "ledger", changed: true });
    const listed = later(["jobs", "paused", ...db]).stdout.split("\n");
    expect(listed[0]).toMatch(/^KIND +NAME +PAUSED AT$/);
    expect(listed.slice(1, 3).map((l) => l.split(/ +/).slice(0, 2).join(" "))).toEqual(["type sendEmail", "topic ledger"]);
    const json = JSON.parse(later(["jobs", "paused", ...db, "--json"]).stdout) as { jobType?: string; topic?: string; pausedAt: number }[];
    expect(json.map((p) => p.jobType ?? p.topic)).toEqual(["sendEmail", "ledger"]);
    // Unknown names: exit 1 with the typed error's message, nothing written.
    const unknownType = later(["jobs", "pause", "--type", "sendEmial", ...db]);
    expect(unknownType.status).toBe(1);
    expect(unknownType.stderr).toMatch(/job type "sendEmial" is not known in this namespace/);
    expect(later(["jobs", "pause", "--topic", "nope", ...db]).status).toBe(1);
    // Bad usage: exit 2.
    expect(later(["jobs", "pause", ...db]).status).toBe(2);
    expect(later(["jobs", "resume", "--type", "sendEmail", "--topic", "ledger", ...db]).status).toBe(2);
    expect(later(["jobs", "resume", "--type", "sendEmail", ...db]).stdout).toBe('resumed job type sendEmail in namespace "default": servers wake at once\n');
    expect(later(["jobs", "resume", "--type", "sendEmail", ...db]).stdout).toBe('job type sendEmail in namespace "default" was not paused\n');
    expect(JSON.parse(later(["jobs", "paused", ...db, "--json"]).stdout)).toEqual([{ topic: "ledger", pausedAt: expect.any(Number) }]);
  });
});
