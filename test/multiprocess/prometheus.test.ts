// M1 checked by the real thing: examples/metrics (a server on SQLite serving `server.metrics()` on
// GET /metrics) runs as a child process, Debian's `prometheus` (installed by .ci/run when missing)
// scrapes it every second, and the test asks Prometheus's HTTP API for later_job_transitions_total
// once the example's jobs have run; `promtool check metrics` passes on the scraped text. Without
// prometheus the suite is skipped with a notice, except under CI=true, where that fails the run.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join, resolve } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { freePort } from "../support/free-port.js";

const PROMETHEUS = ["/usr/bin/prometheus"].find((p) => existsSync(p)) ?? null;
const PROMTOOL = ["/usr/bin/promtool"].find((p) => existsSync(p)) ?? null;
const installed = PROMETHEUS !== null && PROMTOOL !== null;
const runnable = installed || process.env.CI === "true";
if (!runnable) console.warn("!! Prometheus suite skipped: prometheus is not installed (apt-get install -y prometheus)");

const EXAMPLE = resolve(import.meta.dirname, "../../examples/metrics/dist/main.js");
const JOBS = 20;

/** Polls `condition` every 100 ms until it returns a value, or throws with `what` after `timeoutMs`. */
async function until<T>(what: string, timeoutMs: number, condition: () => Promise<T | null>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown = null;
  for (;;) {
    try {
      const value = await condition();
      if (value !== null) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? ` (last error: ${String(last)})` : ""}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** Kills `child` (SIGTERM, then SIGKILL after 5 s) and resolves once it has exited. */
function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((done) => {
    const kill = setTimeout(() => child.kill("SIGKILL"), 5_000);
    child.once("exit", () => {
      clearTimeout(kill);
      done();
    });
    child.kill("SIGTERM");
  });
}

describe.skipIf(!runnable)("Prometheus scrapes examples/metrics", () => {
  const children: ChildProcess[] = [];
  const dirs: string[] = [];
  afterEach(async () => {
    await Promise.all(children.splice(0).map(stop));
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
  });

  it("finds later_job_transitions_total through its HTTP API after the jobs ran, and promtool passes the text", async () => {
    const dir = mkdtempSync(join(tmpdir(), "later-prometheus-"));
    dirs.push(dir);
    const appPort = await freePort();
    const app = spawn(process.execPath, [EXAMPLE], {
      env: { ...process.env, LATER_METRICS_PORT: String(appPort), LATER_METRICS_DB: join(dir, "later.db"), LATER_METRICS_JOBS: String(JOBS) },
      stdio: ["ignore", "pipe", "inherit"],
    });
    children.push(app);
    const metricsUrl = `http://127.0.0.1:${appPort}/metrics`;
    await until("the example's /metrics", 30_000, async () => ((await fetch(metricsUrl)).ok ? true : null));

    const promPort = await freePort();
    const config = join(dir, "prometheus.yml");
    writeFileSync(
      config,
      [
        "global:",
        "  scrape_interval: 1s",
        "scrape_configs:",
        "  - job_name: later",
        "    static_configs:",
        `      - targets: ["127.0.0.1:${appPort}"]`,
        "",
      ].join("\n"),
    );
    const prometheus = spawn(
      PROMETHEUS!,
      [`--config.file=${config}`, `--storage.tsdb.path=${join(dir, "tsdb")}`, `--web.listen-address=127.0.0.1:${promPort}`],
      { stdio: ["ignore", "ignore", "pipe"] },
    );
    children.push(prometheus);
    let promLog = "";
    prometheus.stderr!.on("data", (chunk: Buffer) => {
      promLog = (promLog + chunk.toString()).slice(-4_000);
    });

    // The example's jobs all succeed (the flaky one on its retry): JOBS + 1 successes, scraped and stored.
    const query = `http://127.0.0.1:${promPort}/api/v1/query?query=${encodeURIComponent('sum(later_job_transitions_total{stage="success"})')}`;
    const successes = await until(`Prometheus to store ${JOBS + 1} successes (log tail: ${promLog.slice(-300)})`, 45_000, async () => {
      const body = (await (await fetch(query)).json()) as { status: string; data: { result: { value: [number, string] }[] } };
      const n = Number(body.data.result[0]?.value[1] ?? 0);
      return n === JOBS + 1 ? n : null;
    });
    expect(successes).toBe(JOBS + 1);
    const series = (await (await fetch(`http://127.0.0.1:${promPort}/api/v1/query?query=${encodeURIComponent("later_job_transitions_total")}`)).json()) as {
      data: { result: { metric: Record<string, string> }[] };
    };
    const stages = new Set(series.data.result.map((r) => r.metric.stage));
    for (const stage of ["enqueued", "running", "requeued", "success"]) expect(stages).toContain(stage);
    for (const r of series.data.result) expect(r.metric).toMatchObject({ job: "later", queue: "example" });

    // promtool: the text is valid exposition format with no lint problem (it prints each one).
    const text = await (await fetch(metricsUrl)).text();
    const check = spawnSync(PROMTOOL!, ["check", "metrics"], { input: text, encoding: "utf8" });
    expect({ status: check.status, out: check.stdout + check.stderr }).toEqual({ status: 0, out: "" });
  });
});
