import type { ShutdownOptions } from "./shutdown-options.js";

/** What the leak check reads of a live server (structural, so this module imports no server). */
export interface LiveServer {
  readonly instanceId: string;
  shutdown(options?: ShutdownOptions): Promise<void>;
}

/**
 * The servers of this process that were started and not yet shut down, kept
 * under a process-global symbol so that `@later/runtime/testing`'s leak check
 * sees them whichever copy of the module loaded them.
 */
export function liveServers(): Set<LiveServer> {
  const g = globalThis as { [LIVE_SERVERS]?: Set<LiveServer> };
  return (g[LIVE_SERVERS] ??= new Set());
}
const LIVE_SERVERS = Symbol.for("later.liveServers");
