import { liveBackends } from "../backend/live-backends.js";
import { liveServers } from "../server/live-servers.js";

/** What {@link liveResources} found. */
export interface LiveResources {
  /** Instance ids of servers started and not yet shut down. */
  servers: string[];
  /** Labels (kind, database, namespace) of backends opened and not yet closed, servers' own included. */
  backends: string[];
}

/**
 * For a test suite's leak check: the servers and backends of this process
 * that are still running or open. Each server holds timers, a backend and,
 * with topics, a partition membership; each backend a connection or a pool.
 *
 * `except`: backends to leave out (those open before the test began, from a
 * `beforeAll`). `shutDown: true` also shuts the servers down (deadline 0) and
 * closes the other backends listed, so one leaking test does not fail the
 * tests after it; what is returned is what was found before that.
 */
export async function liveResources(options: { shutDown?: boolean; except?: ReadonlySet<object> } = {}): Promise<LiveResources> {
  const servers = [...liveServers()];
  const backends = [...liveBackends()].filter(([b]) => !options.except?.has(b));
  if (options.shutDown) {
    await Promise.all(servers.map((s) => s.shutdown({ deadlineMs: 0 }).catch(() => undefined)));
    await Promise.all(backends.map(([b]) => (b as { close(): Promise<void> }).close().catch(() => undefined)));
  }
  return { servers: servers.map((s) => s.instanceId), backends: backends.map(([, label]) => label) };
}

/** The backends open now, to pass as `except` to {@link liveResources} later. */
export function openBackendsNow(): ReadonlySet<object> {
  return new Set(liveBackends().keys());
}
