import { liveServers } from "../server/background-job-server.js";

/**
 * For a test suite's leak check: the servers of this process that were
 * started and not yet shut down (each holds timers, a database connection
 * and, with topics, a partition membership). A test that ends with one left
 * leaks it into the next test.
 *
 * `shutDown: true` also shuts them down (deadline 0), so one leaking test does
 * not fail the ones after it.
 */
export async function liveServerIds(options: { shutDown?: boolean } = {}): Promise<string[]> {
  const servers = [...liveServers()];
  if (options.shutDown) await Promise.all(servers.map((s) => s.shutdown({ deadlineMs: 0 }).catch(() => undefined)));
  return servers.map((s) => s.instanceId);
}
