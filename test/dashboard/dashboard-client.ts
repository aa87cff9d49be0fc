/** Calls a dashboard Fetch handler as a browser or a script would, and reads its JSON. */
import type { DashboardHandler } from "@later/runtime/dashboard";

export interface ApiAnswer<T = unknown> {
  status: number;
  headers: Headers;
  body: T;
}

export interface CallOptions {
  method?: string;
  /** `Sec-Fetch-Site` as a browser sends it; none (a script) when omitted. */
  site?: "same-origin" | "same-site" | "cross-site" | "none";
  headers?: Record<string, string>;
}

export const ORIGIN = "http://dashboard.test";

/** `handler` answering `path` (relative to the origin, the base path included); the body parsed when JSON. */
export async function call<T = unknown>(handler: DashboardHandler, path: string, options: CallOptions = {}): Promise<ApiAnswer<T>> {
  const headers = new Headers(options.headers);
  if (options.site) headers.set("sec-fetch-site", options.site);
  const response = await handler(new Request(`${ORIGIN}${path}`, { method: options.method ?? "GET", headers }));
  const text = await response.text();
  const json = response.headers.get("content-type")?.startsWith("application/json") && text !== "";
  return { status: response.status, headers: response.headers, body: (json ? JSON.parse(text) : text) as T };
}

/** A same-origin action (what the page sends). */
export const act = <T = unknown>(handler: DashboardHandler, path: string, method = "POST") => call<T>(handler, path, { method, site: "same-origin" });
