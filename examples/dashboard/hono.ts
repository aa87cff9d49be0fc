// The dashboard in Hono: a Fetch handler, mounted as is at /jobs/ (served on Node by @hono/node-server).
import { serve } from "@hono/node-server";
import { Hono } from "hono";
import { createDashboard } from "@later/runtime/dashboard";
import { authorizeDashboard, port, startJobServer, stopOnSignals } from "./app-jobs.js";

const server = await startJobServer();
const dashboard = createDashboard({ backend: server.backend, basePath: "/jobs/", authorize: authorizeDashboard });
const app = new Hono();
app.all("/jobs", (c) => dashboard(c.req.raw));
app.all("/jobs/*", (c) => dashboard(c.req.raw));
app.get("/", (c) => c.text("the application\n"));

const http = serve({ fetch: app.fetch, port, hostname: "127.0.0.1" }, () => console.log(`dashboard at http://127.0.0.1:${port}/jobs/`));
stopOnSignals(server, () => new Promise((resolve) => http.close(() => resolve())));
