/**
 * A seeded source of random numbers for tests that must be reproducible:
 * mulberry32, a small 32-bit generator (the one partition-child.mjs uses).
 * The same seed gives the same sequence on every run and machine.
 */

/** A generator of numbers in [0, 1), and helpers drawing from it. */
export interface SeededRandom {
  /** The next number in [0, 1). */
  (): number;
  /** An integer in [min, max]. */
  int(min: number, max: number): number;
  /** True with probability `p`. */
  chance(p: number): boolean;
  /** One of `items`, each as likely. */
  pick<T>(items: readonly T[]): T;
  /** One key of `weights`, each as likely as its weight. */
  weighted<K extends string>(weights: Readonly<Record<K, number>>): K;
  /** A generator of its own, seeded from this one: its draws do not shift this one's sequence afterwards. */
  fork(): SeededRandom;
}

/** mulberry32 seeded with `seed` (any integer; taken modulo 2^32). */
export function seededRandom(seed: number): SeededRandom {
  let state = seed >>> 0;
  const next = (() => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }) as SeededRandom;
  next.int = (min, max) => min + Math.floor(next() * (max - min + 1));
  next.chance = (p) => next() < p;
  next.pick = (items) => {
    if (items.length === 0) throw new Error("pick from an empty list");
    return items[Math.floor(next() * items.length)]!;
  };
  next.weighted = <K extends string>(weights: Readonly<Record<K, number>>): K => {
    const entries = Object.entries(weights) as [K, number][];
    let r = next() * entries.reduce((sum, [, w]) => sum + w, 0);
    for (const [key, w] of entries) if ((r -= w) < 0) return key;
    return entries[entries.length - 1]![0];
  };
  next.fork = () => seededRandom(Math.floor(next() * 4294967296));
  return next;
}
