import type { Backend, PartitionRef } from "../backend/backend.js";
import type { Clock } from "../core/clock.js";
import { ownedPartitions } from "../core/partition/rendezvous.js";
import type { TopicConfig } from "../core/partition/topic.js";
import type { ServerEvent } from "../events/server-event.js";
import type { ServerMetrics } from "../metrics/server-metrics.js";

/** A partition's key in {@link PartitionMembership.owns} and the runner's maps: topic and number. */
export const partitionKey = (p: PartitionRef): string => `${p.topic}\0${p.partition}`;

/** What a {@link PartitionMembership} reads of the server's options. */
export interface PartitionMembershipConfig {
  clock: Clock;
  /** A member that has not heartbeat for this long is dead; the heartbeat comes every third of it. Server option `partitionMemberExpiryMs`. */
  partitionMemberExpiryMs: number;
  /** The topics whose partitions it takes part in owning. */
  topics: readonly TopicConfig[];
  onEvent: (event: ServerEvent) => void;
}

/**
 * A partition runner's membership (P5): the heartbeat that keeps this
 * server a live member, and the partitions it owns among the live members
 * (rendezvous hashing, `ownedPartitions`), recomputed at each heartbeat.
 * Ownership changes are told as a `partitions` event; `onGained` is called
 * when the server gained partitions (their heads may be claimed at once).
 */
export class PartitionMembership {
  private owned: PartitionRef[] = [];
  private ownedKeys = new Set<string>();

  constructor(
    private readonly options: PartitionMembershipConfig,
    private readonly backend: Backend,
    private readonly member: string,
    private readonly metrics: ServerMetrics | null,
    private readonly onGained: () => void,
  ) {}

  /** Partitions this server owns after its last heartbeat. */
  get partitions(): readonly PartitionRef[] {
    return this.owned;
  }

  /** Whether the partition of `key` ({@link partitionKey}) is owned after the last heartbeat. */
  owns(key: string): boolean {
    return this.ownedKeys.has(key);
  }

  /** One heartbeat: stays a live member, reads the live members, and recomputes the partitions owned. */
  async heartbeat(): Promise<void> {
    const { clock, partitionMemberExpiryMs, topics } = this.options;
    const now = clock.now();
    const { members } = await this.backend.partitions.memberHeartbeat({ member: this.member, now, expiresAt: now + partitionMemberExpiryMs });
    this.metrics?.membersSeen(members.length);
    const owned = ownedPartitions(this.member, members, topics);
    const keys = new Set(owned.map(partitionKey));
    const gained = owned.filter((p) => !this.ownedKeys.has(partitionKey(p))).length;
    const lost = this.owned.filter((p) => !keys.has(partitionKey(p))).length;
    this.owned = owned;
    this.ownedKeys = keys;
    if (gained > 0 || lost > 0) this.options.onEvent({ type: "partitions", owned: owned.length, gained, lost, members: members.length });
    if (gained > 0) this.onGained();
  }

  /** Heartbeats every third of `partitionMemberExpiryMs` until `stop` aborts; a failed one is told to `report` and the loop goes on. */
  async run(stop: AbortSignal, report: (where: string, error: unknown) => void): Promise<void> {
    const interval = Math.max(1, Math.floor(this.options.partitionMemberExpiryMs / 3));
    while (!stop.aborted) {
      await this.options.clock.sleep(interval, stop);
      if (stop.aborted) break;
      await this.heartbeat().catch((error) => report("partition heartbeat", error));
    }
  }
}
