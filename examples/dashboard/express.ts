// The dashboard in Express, at /jobs/ (toNodeHandler reads Express's originalUrl, so basePath is the full path).
import express from "express";
import { createDashboard, toNodeHandler } from "@later/runtime/dashboard";
import { authorizeDashboard, port, startJobServer, stopOnSignals } from "./app-jobs.js";

const server = await startJobServer();
const app = express();
// `authorize` decides who may act (without it the dashboard is read-only); your own authentication middleware may also go before it.
app.use("/jobs", toNodeHandler(createDashboard({ backend: server.backend, basePath: "/jobs/", authorize: authorizeDashboard })));
app.get("/", (_req, res) => {
  res.send("the application\n");
});

const http = app.listen(port, "127.0.0.1", () => console.log(`dashboard at http://127.0.0.1:${port}/jobs/`));
stopOnSignals(server, () => new Promise((resolve) => http.close(() => resolve())));
