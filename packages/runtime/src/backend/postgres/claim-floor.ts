/**
 * The plain claim's lower bound on `run_at` while the ready index is full of
 * entries PostgreSQL may not yet remove (docs/storage.md "A held-back
 * horizon").
 *
 * Why: a claim moves its rows out of the claimable stages, which leaves each
 * row's entry in `later_jobs_ready` pointing at a row version that is dead
 * once the claim commits. A scan that meets such an entry marks it dead and
 * never visits that row again, but only once no snapshot can still see the
 * version: while a session holds the horizon back (a transaction left idle,
 * a long report in `REPEATABLE READ`), every claim walks the entries of
 * every job claimed since, each with a visit to the table, from the oldest
 * `run_at` on. Measured here with one idle transaction and jobs offered at
 * 0.8 of the clean capacity: completions fell to 0.06-0.15 of it within a
 * minute and stayed there for the 5 minutes it was held.
 *
 * What: a claim whose own statement took {@link ClaimFloorOptions.slowMs}
 * or more starts a degraded spell of twenty times that (from 1 s to 60 s).
 * Until it ends, claims pass a floor for one priority, the one the claim
 * before stopped in (its last row's), and read that priority's part of the
 * ready index from `(priority, floor)`, skipping the dead entries below it
 * without visiting the table; the other priorities are read whole, as a full
 * claim reads them (in a queue of one priority, the usual case, that is
 * all of it). The floor is the `run_at` of the claim's last row when it took
 * a full batch (the oldest rows left of that priority come after it), at
 * most `now` minus {@link ClaimFloorOptions.slackMs} (rows committed a
 * little after the `run_at` they were given).
 *
 * The spell's end is a *check*: one read of the floored priority below the
 * floor (the lowest due `run_at` there), run beside the claims, which stay
 * floored meanwhile. It walks the dead entries a full claim would walk, but
 * no claim waits for it (a full claim at the end of a 5-minute hold walked
 * about 5 million, seconds in which the server claimed nothing). A check
 * faster than `slowMs` ends the degraded state: the next claim is full. A
 * slower one starts the next spell, with the floor lowered to the row it
 * found, if any (a claim still running on the old floor does not raise it
 * again: a claim only moves the floor it read).
 *
 * What a degraded spell costs: a claimable row of that priority with `run_at` below the floor
 * (a job released with its old `run_at`, one enqueued in a transaction that
 * stayed open longer than the slack, one given a `runAt` in the past) waits
 * for the next check: at most the spell's length and the check's. Nothing
 * else changes: the order of what floored claims take is the full claim's.
 *
 * ```text
 *   full ──claim took ≥ slowMs──► degraded until now + 20 × took (floored claims)
 *     ▲                              │ spell over: a check below the floor, beside the claims
 *     │                              ▼
 *     ├──── check took < slowMs ── checking ── check took ≥ slowMs ──► degraded until now + 20 × took
 *     │                                                                  (floor lowered to a row found)
 *     └──── a full claim took < slowMs (another set of job types claims in full)
 * ```
 */

/** Settings of a {@link ClaimFloor}. */
export interface ClaimFloorOptions {
  /** A full claim slower than this starts a degraded spell. Default 50 ms: a claim of 500 takes about 10 ms on a healthy table. */
  slowMs?: number;
  /** How far below `now` a floor may reach at most. Default 1,000 ms. */
  slackMs?: number;
}

/** A floored claim's bound: the lowest `run_at` read of one priority (the other priorities are read whole). */
export interface Floor {
  runAt: number;
  priority: number;
}

/** One claimed row as the floor needs it. */
export interface FloorRow {
  runAt: number;
  priority: number;
}

const SPELL_FACTOR = 20;
const SPELL_MIN_MS = 1_000;
const SPELL_MAX_MS = 60_000;

export class ClaimFloor {
  private readonly slowMs: number;
  private readonly slackMs: number;
  private until = 0;
  private floor: Floor | null = null;
  private checking = false;
  /** The job types the floor was set for: another set (a type paused or resumed) starts with a full claim. */
  private types = "";

  constructor(options: ClaimFloorOptions = {}) {
    this.slowMs = options.slowMs ?? 50;
    this.slackMs = options.slackMs ?? 1_000;
  }

  /** The floor of a claim of `types`; null: a full claim. */
  floorFor(types: readonly string[]): Floor | null {
    if (this.floor === null || types.join("\n") !== this.types) return null;
    return this.floor;
  }

  /**
   * `floor` (this claim's, from {@link floorFor}) when the spell is over at
   * `now` and no check runs: the caller runs the check below it and reports
   * {@link checked}; null otherwise.
   */
  checkDue(now: number, floor: Floor | null): Floor | null {
    if (floor === null || this.checking || now < this.until) return null;
    this.checking = true;
    return floor;
  }

  /**
   * Records the check below `checkedFloor` that ended at `now`: the lowest
   * due `run_at` it found there (null: none), and its time (null: it
   * failed, and the next claim is full).
   */
  checked(checkedFloor: Floor, lowest: number | null, tookMs: number | null, now: number): void {
    this.checking = false;
    if (this.floor === null) return; // a full claim ended the spell meanwhile
    if (tookMs === null || tookMs < this.slowMs) {
      this.floor = null;
      return;
    }
    this.until = now + spellMs(tookMs);
    if (lowest !== null && this.floor.priority === checkedFloor.priority && lowest < this.floor.runAt) {
      this.floor = { runAt: lowest, priority: this.floor.priority };
    }
  }

  /**
   * Records a claim at `now` of `types` that asked for `batch` rows and took
   * `count`, the last of them `last` (in the claim's order): `tookMs`, the
   * statement's time, for a full claim; null for a floored one, which read
   * `used` (the floor it moves: one lowered by a check meanwhile stays).
   */
  claimed(
    now: number,
    types: readonly string[],
    batch: number,
    count: number,
    last: FloorRow | undefined,
    tookMs: number | null,
    used: Floor | null = null,
  ): void {
    if (tookMs !== null) {
      if (tookMs < this.slowMs) {
        this.floor = null;
        return;
      }
      this.until = now + spellMs(tookMs);
      this.types = types.join("\n");
    } else if (this.floor !== used) return;
    let runAt = now - this.slackMs;
    if (last !== undefined && count >= batch) runAt = Math.min(runAt, last.runAt);
    this.floor = { runAt, priority: last?.priority ?? this.floor?.priority ?? 0 };
  }
}

/** A spell's length after a statement of `tookMs`. */
const spellMs = (tookMs: number) => Math.min(SPELL_MAX_MS, Math.max(SPELL_MIN_MS, SPELL_FACTOR * tookMs));
