/**
 * X9 groups: which groups of one job type a limited claim takes jobs from,
 * and how many from each, the same on both dialects. The dialects walk the
 * type's distinct ready groups (one probe of `later_jobs_ready_group` per
 * group, starting after the type's stored cursor and wrapping around), count
 * the type's running jobs per group, and claim each group's share oldest
 * first; this file decides the shares.
 *
 * Round-robin: round 1 gives every due group with a free slot one job, round
 * 2 a second one to those with two free slots, and so on until the claim's
 * slots are given out. A group that gave fewer jobs than its share has no
 * more ready (or they are locked): it leaves, and the next pass gives the
 * slots it left to the groups that gave their full share. One group's
 * backlog thus never takes a slot another group's first job could have.
 * The type's jobs enqueued with no group are a group too, stored with the
 * key `''` (shared/ungrouped-group.ts), which the walk reaches first from
 * the start: between the last group and the first, once a lap.
 */
import { UNGROUPED_KEY } from "./ungrouped-group.js";

/** A group as a claim sees it: its key (`''`: the ungrouped group, shared/ungrouped-group.ts) and its free slots. */
export interface GroupCandidate {
  key: string;
  /** `groupConcurrency −` its running jobs (0: at its limit). */
  free: number;
}

/** How many jobs one pass of a claim takes from one group. */
export interface GroupShare {
  key: string;
  n: number;
}

/**
 * One ready group as the walk of the group index returns it: its key and its oldest claimable row's
 * `run_at` (null: not read, the group taken as due; a pass then finds whether it gives any job).
 */
export interface WalkedGroup {
  key: string;
  firstRunAt: number | null;
}

/** At most this many passes per claim: each after the first only re-deals slots left by groups that ran dry. */
const MAX_PASSES = 3;

/**
 * The groups a claim walks at most: `want` (a slot each), plus those at their
 * limit (`groupConcurrency` running or more: the walk passes them by) and
 * some whose rows are all delayed. The walk stops there; the cursor makes the
 * next claim go on from there. `running`: the type's running jobs per group.
 */
export function groupWalkCap(want: number, running: ReadonlyMap<string | null, number>, limit: number): number {
  let atLimit = 0;
  for (const n of running.values()) if (n >= limit) atLimit++; // the ungrouped (null) too: the walk meets them as the group ''
  return want + atLimit + 16;
}

/**
 * The walk's groups in claim order: those after the cursor (the first
 * walk), then those from the start up to the first one already walked (the
 * second walk, from the start, when the first came back short of `cap`), each
 * once. Compared by key identity only: the database's collation orders them.
 */
export function walkOrder(afterCursor: readonly WalkedGroup[], fromStart: readonly WalkedGroup[], cap: number): WalkedGroup[] {
  const seen = new Set(afterCursor.map((g) => g.key));
  const order = [...afterCursor];
  for (const g of fromStart) {
    if (seen.has(g.key)) break;
    order.push(g);
  }
  return order.slice(0, cap);
}

/**
 * The candidates of a claim at `now`: the walked groups that are due, with
 * their free slots under `limit` given `running` (per group key, null for
 * the ungrouped, stored `''` or NULL); and the earliest `run_at` of a
 * walked group not yet due (null: none), when the claim should look again.
 */
export function groupCandidates(
  walked: readonly WalkedGroup[],
  running: ReadonlyMap<string | null, number>,
  limit: number,
  now: number,
): { candidates: GroupCandidate[]; nextRunAt: number | null } {
  const candidates: GroupCandidate[] = [];
  let nextRunAt: number | null = null;
  for (const g of walked) {
    if (g.firstRunAt !== null && g.firstRunAt > now) {
      if (nextRunAt === null || g.firstRunAt < nextRunAt) nextRunAt = g.firstRunAt;
      continue;
    }
    candidates.push({ key: g.key, free: Math.max(0, limit - (running.get(g.key === UNGROUPED_KEY ? null : g.key) ?? 0)) });
  }
  return { candidates, nextRunAt };
}

/** The passes of one claim over its candidates (see the file comment). */
export class GroupRounds {
  private open: GroupCandidate[];
  private left: number;
  private asked = new Map<string, number>();
  private passes = 0;
  /** The last grouped key given a share, in walk order: the type's next cursor (null: none served). */
  lastServed: string | null = null;

  constructor(candidates: readonly GroupCandidate[], want: number) {
    this.open = candidates.filter((c) => c.free > 0).map((c) => ({ ...c }));
    this.left = want;
  }

  /** The shares of the next pass, in walk order; empty when the claim is done (no slot left, no open group, or the last pass made). */
  shares(): GroupShare[] {
    if (this.passes >= MAX_PASSES || this.left <= 0) return [];
    this.passes++;
    const n = new Map<string, number>();
    let left = this.left;
    for (let round = 1; left > 0; round++) {
      let dealt = false;
      for (const c of this.open) {
        if (left === 0) break;
        if (c.free < round) continue;
        n.set(c.key, round);
        left--;
        dealt = true;
      }
      if (!dealt) break;
    }
    this.asked = n;
    const shares = this.open.filter((c) => n.has(c.key)).map((c) => ({ key: c.key, n: n.get(c.key)! }));
    for (const s of shares) this.lastServed = s.key;
    return shares;
  }

  /** What the pass took per group key; a group that gave fewer than asked leaves. */
  took(got: ReadonlyMap<string | null, number>): void {
    for (const c of this.open) {
      const asked = this.asked.get(c.key) ?? 0;
      const taken = got.get(c.key) ?? 0;
      c.free -= taken;
      this.left -= taken;
      if (taken < asked) c.free = 0;
    }
    this.open = this.open.filter((c) => c.free > 0);
  }
}

/** How many of `keys` (the `group_key` of each claimed or running row; null: ungrouped) each group has. */
export function countByGroup(keys: Iterable<unknown>): Map<string | null, number> {
  const got = new Map<string | null, number>();
  for (const k of keys) {
    const key = k === null || k === undefined ? null : String(k);
    got.set(key, (got.get(key) ?? 0) + 1);
  }
  return got;
}
