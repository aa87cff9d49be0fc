/**
 * `toNodeHandler(handler)`: a Fetch handler (the dashboard's) as a
 * node:http request listener, `(req, res) => void`, which node:http,
 * Express (`app.use(path, ...)`) and Fastify (through `@fastify/middie` or
 * a raw route) mount.
 *
 * The request URL is the one the client sent: Express's `req.originalUrl`
 * when present (Express strips the mount path from `req.url`), else
 * `req.url`, on the `Host` the client used (`http` unless the socket is
 * TLS). The body of an action is read whole (the dashboard's actions need
 * none, so it is capped at 64 KiB: more is 413). A handler that rejects is
 * answered 500 (it never does: the dashboard answers its errors as JSON);
 * a client that goes away mid-answer just ends the response.
 */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { TLSSocket } from "node:tls";
import type { DashboardHandler } from "./create-dashboard.js";

/** Largest request body passed on, bytes. */
const MAX_BODY_BYTES = 64 * 1024;

/** A node:http request listener; `next` (Express) is never called: the dashboard answers every request it gets. */
export type NodeRequestListener = (req: IncomingMessage, res: ServerResponse, next?: (error?: unknown) => void) => void;

export function toNodeHandler(handler: DashboardHandler): NodeRequestListener {
  return (req, res) => {
    void answer(handler, req, res).catch(() => {
      if (!res.headersSent) {
        res.writeHead(500, { "content-type": "application/json; charset=utf-8" });
        res.end(JSON.stringify({ error: { code: "INTERNAL", message: "the dashboard failed to answer this request" } }));
      } else res.destroy();
    });
  };
}

async function answer(handler: DashboardHandler, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const method = (req.method ?? "GET").toUpperCase();
  const body = method === "GET" || method === "HEAD" ? undefined : await readBody(req);
  if (body === null) {
    res.writeHead(413, { "content-type": "application/json; charset=utf-8", connection: "close" });
    res.end(JSON.stringify({ error: { code: "INVALID_ARGUMENT", message: `the request body is over ${MAX_BODY_BYTES} bytes` } }));
    return;
  }
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || name.startsWith(":")) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  const path = (req as IncomingMessage & { originalUrl?: string }).originalUrl ?? req.url ?? "/";
  const scheme = (req.socket as TLSSocket).encrypted ? "https" : "http";
  const host = req.headers.host ?? "localhost";
  const request = new Request(`${scheme}://${host}${path.startsWith("/") ? path : `/${path}`}`, {
    method,
    headers,
    ...(body && body.length > 0 ? { body: new Uint8Array(body) } : {}),
  });
  const response = await handler(request);
  const out: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    out[name] = value;
  });
  const bytes = method === "HEAD" || response.body === null ? null : Buffer.from(await response.arrayBuffer());
  if (bytes) out["content-length"] = String(bytes.length);
  res.writeHead(response.status, out);
  res.end(bytes ?? undefined);
}

/** The whole body, or null past {@link MAX_BODY_BYTES}. */
async function readBody(req: IncomingMessage): Promise<Buffer | null> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    const buffer = chunk as Buffer;
    size += buffer.length;
    if (size > MAX_BODY_BYTES) return null;
    chunks.push(buffer);
  }
  return Buffer.concat(chunks);
}
