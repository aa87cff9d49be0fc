// A server on SQLite whose Prometheus metrics are served on GET /metrics
// (`server.metrics()`), for Prometheus to scrape. It runs a few jobs at start
// (one fails once and is retried); POST /enqueue?n=10 adds more.
//
//   LATER_METRICS_PORT=9464 LATER_METRICS_DB=later.db node dist/main.js
//
// Prometheus (prometheus.yml):
//   scrape_configs:
//     - job_name: later
//       static_configs: [{ targets: ["127.0.0.1:9464"] }]
import { createServer } from "node:http";
import { BackgroundJobServer, RetryPolicy } from "@later/runtime";
import { sqlite } from "@later/runtime/sqlite";

const port = Number(process.env.LATER_METRICS_PORT ?? 9464);
const file = process.env.LATER_METRICS_DB ?? "later-metrics.db";
const startJobs = Number(process.env.LATER_METRICS_JOBS ?? 20);

let flakyRuns = 0;
const server = await BackgroundJobServer.start({
  context: {},
  backend: sqlite({ file, namespace: "example" }),
  autoMigrate: true,
  handlers: {
    resize: { handle: async () => new Promise((resolve) => setTimeout(resolve, 5)) },
    flaky: {
      handle: async () => {
        if (++flakyRuns === 1) throw new Error("fails once");
      },
      retry: () => RetryPolicy.fixed(1, 100),
    },
  },
});

const http = createServer((req, res) => {
  const url = new URL(req.url ?? "/", "http://localhost");
  if (req.method === "GET" && url.pathname === "/metrics") {
    server.metrics().then(
      (text) => {
        res.writeHead(200, { "content-type": "text/plain; version=0.0.4; charset=utf-8" });
        res.end(text);
      },
      (error: unknown) => {
        res.writeHead(500).end(String(error));
      },
    );
    return;
  }
  if (req.method === "POST" && url.pathname === "/enqueue") {
    const n = Math.min(10_000, Math.max(1, Number(url.searchParams.get("n") ?? 1) || 1));
    server.publisher
      .enqueueMany(
        "resize",
        Array.from({ length: n }, (_, i) => ({ i })),
      )
      .then(
        (ids) => res.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ enqueued: ids.length })),
        (error: unknown) => res.writeHead(500).end(String(error)),
      );
    return;
  }
  res.writeHead(404).end("not found\n");
});
http.listen(port, "127.0.0.1", () => console.log(`metrics on http://127.0.0.1:${port}/metrics`));

await server.publisher.enqueueMany(
  "resize",
  Array.from({ length: startJobs }, (_, i) => ({ i })),
);
await server.publisher.enqueue("flaky", {});

server.shutdownOnSignals({ exit: false });
process.once("SIGTERM", () => http.close());
process.once("SIGINT", () => http.close());
