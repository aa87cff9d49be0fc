// The dashboard in plain node:http, at /jobs/ beside the application's own routes.
import { createServer } from "node:http";
import { createDashboard, toNodeHandler } from "@later/runtime/dashboard";
import { authorizeDashboard, port, startJobServer, stopOnSignals } from "./app-jobs.js";

const server = await startJobServer();
const dashboard = toNodeHandler(createDashboard({ backend: server.backend, basePath: "/jobs/", authorize: authorizeDashboard }));

const http = createServer((req, res) => {
  if (req.url === "/jobs" || req.url?.startsWith("/jobs/")) return dashboard(req, res);
  res.end("the application\n");
});
http.listen(port, "127.0.0.1", () => console.log(`dashboard at http://127.0.0.1:${port}/jobs/`));
stopOnSignals(server, () => new Promise((resolve) => http.close(() => resolve())));
