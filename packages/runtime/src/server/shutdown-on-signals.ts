import { describeThrown, InvalidConfigError } from "../errors.js";
import type { ShutdownOptions } from "./shutdown-options.js";

/** Options of `server.shutdownOnSignals()`. */
export interface ShutdownOnSignalsOptions {
  /**
   * How long running handlers get to finish and commit once a signal
   * arrived; those still running then are aborted and their jobs put back
   * (see `shutdown()`). Default 30000 (30 s). Keep it a few seconds under
   * the time your platform waits before SIGKILL (Kubernetes:
   * `terminationGracePeriodSeconds`, default 30 s), so that the jobs are
   * put back before the kill.
   */
  deadlineMs?: number;
  /** The signals to handle. Default `["SIGTERM", "SIGINT"]`. */
  signals?: readonly NodeJS.Signals[];
  /**
   * After the shutdown finished, end the process: `process.exit(0)`, or
   * `process.exit(1)` when the shutdown failed. Default true. With false,
   * the listeners are removed and the process ends once nothing else keeps
   * it alive (an HTTP server of the application, say).
   */
  exit?: boolean;
}

/** Signals within this long of the first are taken for the same request (a terminal's Ctrl-C reaching a process group twice, a supervisor sending SIGINT and SIGTERM). */
const REPEAT_WINDOW_MS = 5_000;

/**
 * Wires process signals to a graceful shutdown, the way graphile-worker
 * does: the first SIGTERM or SIGINT starts `shutdown({ deadlineMs })`;
 * further signals within 5 s are ignored; one after that forces the
 * process out at once (`process.exit(1)`: handlers still running are left
 * to lease recovery). Returns a function that removes the listeners.
 */
export function shutdownOnSignals(server: { shutdown(options?: ShutdownOptions): Promise<void> }, options: ShutdownOnSignalsOptions = {}): () => void {
  if (options === null || typeof options !== "object") throw new InvalidConfigError("shutdownOnSignals options must be an object");
  const deadlineMs = options.deadlineMs ?? 30_000;
  if (!Number.isFinite(deadlineMs) || deadlineMs < 0) throw new InvalidConfigError(`shutdownOnSignals deadlineMs must be >= 0, got ${String(deadlineMs)}`);
  const signals = options.signals ?? (["SIGTERM", "SIGINT"] as const);
  const exit = options.exit ?? true;
  let firstAt: number | null = null;
  const remove = () => {
    for (const signal of signals) process.removeListener(signal, onSignal);
  };
  function onSignal(signal: NodeJS.Signals): void {
    const now = Date.now();
    if (firstAt !== null) {
      if (now - firstAt < REPEAT_WINDOW_MS) return;
      process.stderr.write(`later: ${signal} again during the graceful shutdown: exiting at once\n`);
      process.exit(1);
    }
    firstAt = now;
    server.shutdown({ deadlineMs }).then(
      () => {
        remove();
        if (exit) process.exit(0);
      },
      (error: unknown) => {
        remove();
        process.stderr.write(`later: the graceful shutdown failed: ${describeThrown(error)}\n`);
        if (exit) process.exit(1);
      },
    );
  }
  for (const signal of signals) process.on(signal, onSignal);
  return remove;
}
