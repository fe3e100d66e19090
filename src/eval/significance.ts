/**
 * The statistics of comparing two evals: Fisher's exact test on a 2×2 table, Holm's step-down
 * correction across tasks, and a seeded percentile bootstrap of a mean. Pure functions over counts.
 */
import { seededRandom } from '../rollout/state.js';

/** ln(n!) for n = 0, 1, 2, ...: a table extended as needed (exact sums of logs, no approximation). */
const logFactorials: number[] = [0];

function logFactorial(n: number): number {
  for (let i = logFactorials.length; i <= n; i++) logFactorials.push(logFactorials[i - 1]! + Math.log(i));
  return logFactorials[n]!;
}

/**
 * Two tables whose probabilities differ by less than this factor count as equally likely (the
 * tolerance R's fisher.test uses), so floating-point noise never drops a tie from the p-value.
 */
const TIE_TOLERANCE = 1 + 1e-7;

/**
 * Fisher's exact test, two-sided: the probability, with the margins fixed, of a table at most as
 * likely as the one seen. The table is `[[a, b], [c, d]]`: row one passed `a`, failed `b`; row two
 * passed `c`, failed `d`. 1 when either row or either column is empty.
 */
export function fisherExact(a: number, b: number, c: number, d: number): number {
  for (const x of [a, b, c, d]) {
    if (!Number.isInteger(x) || x < 0) throw new RangeError(`fisherExact needs counts (non-negative integers); got ${a}, ${b}, ${c}, ${d}`);
  }
  const row1 = a + b;
  const row2 = c + d;
  const col1 = a + c;
  const n = row1 + row2;
  // The hypergeometric law of the top-left cell x given the margins.
  const constant = logFactorial(row1) + logFactorial(row2) + logFactorial(col1) + logFactorial(n - col1) - logFactorial(n);
  const logP = (x: number): number =>
    constant - logFactorial(x) - logFactorial(row1 - x) - logFactorial(col1 - x) - logFactorial(row2 - col1 + x);
  const low = Math.max(0, col1 - row2);
  const high = Math.min(row1, col1);
  if (low === high) return 1;
  const observed = logP(a);
  const bound = observed + Math.log(TIE_TOLERANCE);
  let p = 0;
  for (let x = low; x <= high; x++) {
    const lp = logP(x);
    if (lp <= bound) p += Math.exp(lp);
  }
  return Math.min(1, p);
}

/**
 * Holm's step-down adjustment: the p-values in ascending order are multiplied by m, m−1, ..., 1,
 * made non-decreasing, and capped at 1. Rejecting where the adjusted value is below α controls the
 * chance of any false rejection at α. Returns the adjusted values in the input's order.
 */
export function holm(pValues: readonly number[]): number[] {
  const m = pValues.length;
  const order = pValues.map((p, i) => ({ p, i })).sort((x, y) => x.p - y.p || x.i - y.i);
  const adjusted = new Array<number>(m);
  let running = 0;
  order.forEach(({ p, i }, rank) => {
    running = Math.max(running, Math.min(1, (m - rank) * p));
    adjusted[i] = running;
  });
  return adjusted;
}

/**
 * The 95% percentile bootstrap interval of the mean of `values`: `resamples` samples of the same
 * size drawn with replacement by a PRNG seeded with `seed` (so the interval is reproducible), the
 * 2.5th and 97.5th percentiles of their means. Null when there are no values.
 */
export function bootstrapMeanCi95(values: readonly number[], seed: number, resamples: number): [number, number] | null {
  const n = values.length;
  if (n === 0) return null;
  if (!Number.isInteger(resamples) || resamples < 1) throw new RangeError(`resamples must be an integer >= 1 (got ${resamples})`);
  const random = seededRandom(seed);
  const means = new Float64Array(resamples);
  for (let r = 0; r < resamples; r++) {
    let sum = 0;
    for (let i = 0; i < n; i++) sum += values[Math.floor(random() * n)]!;
    means[r] = sum / n;
  }
  means.sort();
  return [quantile(means, 0.025), quantile(means, 0.975)];
}

/** The q-quantile of sorted values, interpolating linearly between ranks (R's type 7). */
export function quantile(sorted: ArrayLike<number>, q: number): number {
  const h = (sorted.length - 1) * q;
  const lo = Math.floor(h);
  const hi = Math.min(sorted.length - 1, lo + 1);
  return sorted[lo]! + (h - lo) * (sorted[hi]! - sorted[lo]!);
}

/** The mean, or null for no values. */
export function mean(values: readonly number[]): number | null {
  return values.length === 0 ? null : values.reduce((s, v) => s + v, 0) / values.length;
}
