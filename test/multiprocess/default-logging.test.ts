// Defaults that speak: a server with neither onEvent nor logger writes each warning and error cause
// once to stderr, with its code, so a wrong port is not a silent wait of databaseWaitMs in start();
// `logger: null` writes nothing. Run as a child process, whose stderr is only later's.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { freePort } from "../support/free-port.js";

const CHILD = fileURLToPath(new URL("./default-logging-child.mjs", import.meta.url));

function runChild(config: unknown): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const proc = spawn(process.execPath, [CHILD, JSON.stringify(config)], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    proc.stdout.on("data", (d: Buffer) => (stdout += d.toString()));
    proc.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    proc.on("error", reject);
    proc.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

describe("default logging of a server", () => {
  it("no onEvent, no logger: one stderr line for the unreachable database, with its code, however many tries", async () => {
    const port = await freePort();
    const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
    // 1.5 s of waiting: tries at 0, 0.25, 0.75 and 1.5 s, each an error event; one line.
    const { code, stdout, stderr } = await runChild({ url, databaseWaitMs: 1_500 });
    expect(code).toBe(0);
    expect(stdout).toBe("rejected DATABASE_UNAVAILABLE\n");
    const lines = stderr.split("\n").filter((l) => l !== "");
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(
        `^later: warn DATABASE_UNAVAILABLE \\(start\\): cannot connect to PostgreSQL at postgres://postgres@127\\.0\\.0\\.1:${port}/postgres: .* \\(retrying until databaseWaitMs\\)$`,
      ),
    );
  });

  it("logger: null writes nothing", async () => {
    const port = await freePort();
    const { stdout, stderr } = await runChild({ url: `postgres://postgres@127.0.0.1:${port}/postgres`, databaseWaitMs: 600, logger: "null" });
    expect(stdout).toBe("rejected DATABASE_UNAVAILABLE\n");
    expect(stderr).toBe("");
  });
});
