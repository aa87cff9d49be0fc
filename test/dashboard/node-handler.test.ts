/**
 * toNodeHandler on every backend, in a node:http server of this process:
 * headers and status pass through, HEAD answers without a body, an
 * oversized body is 413 before the dashboard sees it, and an action sent
 * through it reaches the dashboard with its method and Sec-Fetch-Site.
 */
import { createServer, request, type Server } from "node:http";
import { describe, expect, it, onTestFinished } from "vitest";
import { RetryPolicy } from "@later/runtime";
import { createDashboard, toNodeHandler } from "@later/runtime/dashboard";
import { BACKENDS } from "../conformance/backends.js";
import { settled, useHarness } from "../conformance/harness.js";

interface Answer {
  status: number | undefined;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

function send(port: number, method: string, path: string, headers: Record<string, string> = {}, body?: Buffer): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = request({ host: "127.0.0.1", port, method, path, headers }, (res) => {
      let text = "";
      res.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
      res.on("end", () => resolve({ status: res.statusCode, headers: res.headers, body: text }));
    });
    req.on("error", reject);
    req.end(body);
  });
}

async function listen(server: Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  onTestFinished(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const address = server.address();
  if (typeof address !== "object" || !address) throw new Error("no port");
  return address.port;
}

describe.each(BACKENDS)("toNodeHandler on $name", (entry) => {
  const harness = useHarness(entry);

  it("passes status, headers and method through; HEAD has no body; a body over 64 KiB is 413", async () => {
    const h = harness();
    const server = await h.start({ handlers: { boom: { handle: () => Promise.reject(new Error("no")), retry: () => RetryPolicy.noRetries() } } });
    const id = await server.publisher.enqueue("boom", {});
    await settled(() => server.backend.inspect.jobGet({ id }));
    const port = await listen(createServer(toNodeHandler(createDashboard({ backend: server.backend, basePath: "/ops/", readOnly: false }))));

    const page = await send(port, "GET", "/ops/");
    expect(page.status).toBe(200);
    expect(page.headers["content-security-policy"]).toContain("frame-ancestors 'none'");
    expect(page.headers["x-content-type-options"]).toBe("nosniff");
    expect(Number(page.headers["content-length"])).toBe(Buffer.byteLength(page.body));

    const head = await send(port, "HEAD", "/ops/api/jobs");
    expect([head.status, head.body, head.headers["content-type"]]).toEqual([200, "", "application/json; charset=utf-8"]);

    const jobs = JSON.parse((await send(port, "GET", "/ops/api/jobs?stage=failed")).body) as { jobs: { id: string }[] };
    expect(jobs.jobs.map((j) => j.id)).toEqual([id]);

    const tooBig = await send(port, "POST", `/ops/api/jobs/${id}/retry`, { "sec-fetch-site": "same-origin" }, Buffer.alloc(100 * 1024));
    expect(tooBig.status).toBe(413);
    expect((await server.backend.inspect.jobGet({ id }))?.stage).toBe("failed");

    const crossSite = await send(port, "POST", `/ops/api/jobs/${id}/retry`, { "sec-fetch-site": "cross-site" });
    expect(crossSite.status).toBe(403);
    const retried = await send(port, "POST", `/ops/api/jobs/${id}/retry`, { "sec-fetch-site": "same-origin" });
    expect([retried.status, JSON.parse(retried.body)]).toEqual([200, { action: "retry", jobIds: [id], count: 1 }]);
  });
});
