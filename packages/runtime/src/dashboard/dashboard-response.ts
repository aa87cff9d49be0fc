/**
 * Every response the dashboard sends, with its security headers, and the
 * JSON error shape `{ error: { code, message } }` with its status:
 *
 * | status | code | when |
 * | --- | --- | --- |
 * | 400 | `INVALID_ARGUMENT` (or another `LaterError` code) | a bad query parameter or path segment |
 * | 403 | `FORBIDDEN` | `authorize` said no, or an action sent cross-site by a browser |
 * | 403 | `READ_ONLY` | an action on a `readOnly` dashboard |
 * | 404 | `NOT_FOUND` / `JOB_NOT_FOUND` | an unknown route or asset / an unknown job id |
 * | 404 | `JOB_TYPE_NOT_FOUND` / `UNKNOWN_TOPIC` | pause or resume of a job type or topic the namespace does not know (X4) |
 * | 405 | `METHOD_NOT_ALLOWED` | a known route with another method (`Allow` names the right ones) |
 * | 409 | `JOB_ACTION_REFUSED` | an action on a job in a stage it does not apply to |
 * | 501 | `NOT_IMPLEMENTED` | cancel (routes kept for when the runtime has it) |
 * | 503 | `DATABASE_UNAVAILABLE`, `DATABASE_BUSY`, `SCHEMA_VERSION_MISMATCH` | the database cannot answer now |
 * | 500 | `INTERNAL` | anything else (the message says no more than that) |
 */
import { LaterError } from "../errors.js";

/** The page's Content-Security-Policy: nothing but its own files, no inline script or style, never framed. */
export const CONTENT_SECURITY_POLICY =
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/** Headers on every response: the CSP, no MIME sniffing, no framing, no referrer leaving the page. */
function securityHeaders(contentType: string): Headers {
  return new Headers({
    "content-type": contentType,
    "content-security-policy": CONTENT_SECURITY_POLICY,
    "x-content-type-options": "nosniff",
    "x-frame-options": "DENY",
    "referrer-policy": "no-referrer",
  });
}

/** A JSON response, never cached (the data is live). */
export function jsonResponse(body: unknown, status = 200, extra: Record<string, string> = {}): Response {
  const headers = securityHeaders("application/json; charset=utf-8");
  headers.set("cache-control", "no-store");
  for (const [name, value] of Object.entries(extra)) headers.set(name, value);
  return new Response(JSON.stringify(body), { status, headers });
}

/** A file of the page; `cache` `no-cache` (revalidated) since the files change with the release. */
export function fileResponse(body: string, contentType: string, method: string): Response {
  const headers = securityHeaders(contentType);
  headers.set("cache-control", "no-cache");
  return new Response(method === "HEAD" ? null : body, { status: 200, headers });
}

/** A permanent redirect (the base path without its trailing slash). */
export function redirectResponse(location: string): Response {
  const headers = securityHeaders("text/plain; charset=utf-8");
  headers.set("location", location);
  return new Response(null, { status: 308, headers });
}

/** An error as JSON: `{ error: { code, message } }`. */
export function errorResponse(status: number, code: string, message: string, extra: Record<string, string> = {}): Response {
  return jsonResponse({ error: { code, message } }, status, extra);
}

/** A thrown error as its JSON response (see the module table). */
export function responseForError(error: unknown): Response {
  if (error instanceof LaterError) return errorResponse(statusForCode(error.code), error.code, error.message);
  return errorResponse(500, "INTERNAL", "the dashboard failed to answer this request (an unexpected error; see the server's log)");
}

function statusForCode(code: string): number {
  switch (code) {
    case "JOB_NOT_FOUND":
    case "JOB_TYPE_NOT_FOUND":
    case "UNKNOWN_TOPIC":
      return 404;
    case "JOB_ACTION_REFUSED":
      return 409;
    case "DATABASE_UNAVAILABLE":
    case "DATABASE_BUSY":
    case "SCHEMA_VERSION_MISMATCH":
      return 503;
    case "DATABASE_FULL":
      return 507;
    default:
      return 400;
  }
}
