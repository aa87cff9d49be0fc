/**
 * The value axis of a chart: where its gridlines go, from 0 to the axis top.
 *
 * The step is the smallest 1, 2 or 5 × 10^k that covers `max` in at most
 * three steps, so the axis reads in round numbers and shows two to four
 * ticks; the top is the first step at or above `max`. With `integers` (a
 * chart of counts), the step is at least 1, so every tick is a distinct
 * whole number: a backlog of 1 reads `0 1`, not `0 0.5 1` written as
 * `0 1 1` once rounded.
 */
export interface AxisTicksOptions {
  /** The values are counts: ticks are distinct integers (step at least 1). Default false. */
  integers?: boolean;
}

/** Tick values from 0 up to the axis top, ascending and distinct; `max` at or below 0 (or not a number) is read as 1. */
export function axisTicks(max: number, options: AxisTicksOptions = {}): number[] {
  const reach = max > 0 && Number.isFinite(max) ? max : 1;
  let step = niceStep(reach / 3);
  if (options.integers) step = Math.max(1, step);
  const count = Math.ceil(reach / step - 1e-9);
  // k * step, rounded to the step's decimals (0.2 * 3 is 0.6000000000000001 in floating point).
  const decimals = Math.max(0, -Math.floor(Math.log10(step)));
  return Array.from({ length: count + 1 }, (_, k) => Number((k * step).toFixed(decimals)));
}

/** The smallest of 1, 2, 5 × 10^k at or above `value` (> 0). */
function niceStep(value: number): number {
  const power = 10 ** Math.floor(Math.log10(value));
  for (const factor of [1, 2, 5]) if (factor * power >= value - 1e-12 * power) return factor * power;
  return 10 * power;
}
