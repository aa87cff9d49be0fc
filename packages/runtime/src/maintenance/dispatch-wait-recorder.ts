import type { DispatchWaitBucket } from "../backend/backend.js";
import { errorEvent } from "../events/server-event.js";
import { PeriodicService, type MaintenanceHost } from "./periodic-service.js";

/** Which claims a wait belongs to: regular jobs, or partition heads. */
export type DispatchKind = "regular" | "partitioned";

/**
 * Dispatch wait (docs/semantics.md D1 `dispatchWait`): how long a job waited between
 * becoming claimable and being claimed, summed per second in this process
 * and added to the namespace's buckets once a second (task
 * `dispatch-wait`, run by every server: each adds its own claims; one
 * upsert per kind per second, counts and totals adding up, maxima taking
 * the larger).
 *
 * The claim paths call {@link record} with each claimed job: a map lookup
 * and three additions, no I/O. A wait is `claimedAt - readyAt`, at least 0;
 * the claimer passes `readyAt` (a regular job's `runAt`, which a retry or a
 * released continuation moves to when it became claimable; a partition
 * head's `runAt` when the fetcher claimed it, and the claim time when the
 * previous head's finish claimed it in the same write: it became ready
 * then). A head whose partition moved to another server waits from its
 * `runAt`, so a move shows as dispatch wait.
 *
 * `stop()` flushes what is left. A failed flush drops its seconds (an
 * `error` event): this is a metric, not a record.
 */
export class DispatchWaitRecorder extends PeriodicService {
  private buckets = new Map<number, Record<DispatchKind, DispatchWaitBucket>>();

  constructor(host: MaintenanceHost, intervalMs = 1000) {
    super(host, "dispatch-wait", intervalMs, false);
  }

  /** Records one claim of `kind` at `claimedAt` of a job claimable since `readyAt`. */
  record(kind: DispatchKind, claimedAt: number, readyAt: number): void {
    const at = Math.floor(claimedAt / 1000) * 1000;
    let bucket = this.buckets.get(at);
    if (!bucket)
      this.buckets.set(at, (bucket = { regular: { claims: 0, waitTotalMs: 0, waitMaxMs: 0 }, partitioned: { claims: 0, waitTotalMs: 0, waitMaxMs: 0 } }));
    const wait = Math.max(0, claimedAt - readyAt);
    const b = bucket[kind];
    b.claims += 1;
    b.waitTotalMs += wait;
    if (wait > b.waitMaxMs) b.waitMaxMs = wait;
  }

  /** Adds every second recorded so far to the buckets; resolves to the claims written. */
  async runOnce(): Promise<number> {
    const pending = this.buckets;
    this.buckets = new Map();
    let claims = 0;
    for (const [at, b] of [...pending].sort((x, y) => x[0] - y[0])) {
      await this.host.backend.activity.dispatchWaitAdd({ at, regular: b.regular, partitioned: b.partitioned });
      claims += b.regular.claims + b.partitioned.claims;
    }
    return claims;
  }

  /** Stops the loop, then writes what is left. */
  override async stop(): Promise<void> {
    await super.stop();
    await this.runOnce().catch((error) => this.host.onEvent(errorEvent(this.task, error)));
  }
}
