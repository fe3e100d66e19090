/**
 * The statistics of an eval: unbiased pass@k and pass^k estimators, the Wilson interval of a pass
 * rate, and nearest-rank percentiles. Pure functions over counts.
 */

/**
 * pass@k: the chance that at least one of k trials drawn without replacement from n graded
 * trials (c of them passed) passes: 1 − C(n−c, k) / C(n, k). Null when k > n.
 */
export function passAtK(n: number, c: number, k: number): number | null {
  if (k > n || k < 1) return null;
  if (n - c < k) return 1;
  // C(n−c, k) / C(n, k) = Π_{i<k} (n−c−i) / (n−i), computed as a product to stay finite.
  let ratio = 1;
  for (let i = 0; i < k; i++) ratio *= (n - c - i) / (n - i);
  return 1 - ratio;
}

/**
 * pass^k: the chance that all of k trials drawn without replacement pass: C(c, k) / C(n, k).
 * Null when k > n.
 */
export function passHatK(n: number, c: number, k: number): number | null {
  if (k > n || k < 1) return null;
  if (c < k) return 0;
  let ratio = 1;
  for (let i = 0; i < k; i++) ratio *= (c - i) / (n - i);
  return ratio;
}

/** The ks reported for an eval of `trials` trials: every power of two up to it, and itself. */
export function reportedKs(trials: number): number[] {
  const ks: number[] = [];
  for (let k = 1; k <= trials; k *= 2) ks.push(k);
  if (ks.at(-1) !== trials && trials >= 1) ks.push(trials);
  return ks;
}

/** Both estimators for each reported k, keyed by k. */
export function estimators(trials: number, n: number, c: number): { passAtK: Record<string, number | null>; passHatK: Record<string, number | null> } {
  const at: Record<string, number | null> = {};
  const hat: Record<string, number | null> = {};
  for (const k of reportedKs(trials)) {
    at[k] = passAtK(n, c, k);
    hat[k] = passHatK(n, c, k);
  }
  return { passAtK: at, passHatK: hat };
}

/** The 95% Wilson score interval of c successes in n trials; null when n is 0. */
export function wilson95(c: number, n: number): [number, number] | null {
  if (n === 0) return null;
  const z = 1.959963984540054;
  // At the edges the bound is exact (floating point would leave 1e-17 instead of 0).
  if (c === 0) return [0, (z * z) / (n + z * z)];
  if (c === n) return [n / (n + z * z), 1];
  const p = c / n;
  const z2 = z * z;
  const denominator = 1 + z2 / n;
  const centre = (p + z2 / (2 * n)) / denominator;
  const half = (z * Math.sqrt((p * (1 - p)) / n + z2 / (4 * n * n))) / denominator;
  return [Math.max(0, centre - half), Math.min(1, centre + half)];
}

/** Nearest-rank percentile (p in 0..100) of unsorted values; null when there are none. */
export function percentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.max(1, Math.ceil((p / 100) * sorted.length));
  return sorted[rank - 1]!;
}
