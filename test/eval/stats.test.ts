/**
 * The statistics of an eval against independent references: pass@k and pass^k against a
 * brute-force count over every k-subset of the trials, the Wilson interval against values
 * computed here from its textbook formula, and nearest-rank percentiles by hand.
 */
import { describe, expect, it } from 'vitest';
import { estimators, passAtK, passHatK, percentile, reportedKs, wilson95 } from '../../src/eval/stats.js';

/** Every k-subset of [0, n), as index arrays. */
function subsets(n: number, k: number): number[][] {
  const out: number[][] = [];
  const pick = (start: number, chosen: number[]): void => {
    if (chosen.length === k) {
      out.push([...chosen]);
      return;
    }
    for (let i = start; i < n; i++) pick(i + 1, [...chosen, i]);
  };
  pick(0, []);
  return out;
}

/** The share of k-subsets of n trials (the first c passed) with at least one / only passes. */
function bruteForce(n: number, c: number, k: number): { atLeastOne: number; all: number } {
  const all = subsets(n, k);
  const passed = (i: number): boolean => i < c;
  return {
    atLeastOne: all.filter((s) => s.some(passed)).length / all.length,
    all: all.filter((s) => s.every(passed)).length / all.length,
  };
}

describe('passAtK and passHatK', () => {
  const cases: [number, number, number][] = [];
  for (let n = 1; n <= 8; n++) for (let c = 0; c <= n; c++) for (let k = 1; k <= n; k++) cases.push([n, c, k]);

  it('match the share of all k-subsets of n trials with c passes, for every n ≤ 8, c and k', () => {
    for (const [n, c, k] of cases) {
      const expected = bruteForce(n, c, k);
      expect(passAtK(n, c, k), `pass@${k} n=${n} c=${c}`).toBeCloseTo(expected.atLeastOne, 12);
      expect(passHatK(n, c, k), `pass^${k} n=${n} c=${c}`).toBeCloseTo(expected.all, 12);
    }
  });

  it('stay within [0, 1] and are exact at the edges: c = 0 gives 0, c = n gives 1', () => {
    for (const [n, c, k] of cases) {
      for (const value of [passAtK(n, c, k), passHatK(n, c, k)]) {
        expect(value).not.toBeNull();
        expect(value!).toBeGreaterThanOrEqual(0);
        expect(value!).toBeLessThanOrEqual(1);
      }
      if (c === 0) expect([passAtK(n, c, k), passHatK(n, c, k)]).toEqual([0, 0]);
      if (c === n) expect([passAtK(n, c, k), passHatK(n, c, k)]).toEqual([1, 1]);
    }
  });

  it('equal the pass rate at k = 1', () => {
    for (const [n, c] of cases) {
      expect(passAtK(n, c, 1)).toBeCloseTo(c / n, 12);
      expect(passHatK(n, c, 1)).toBeCloseTo(c / n, 12);
    }
  });

  it('are null where k > n (too few graded trials), including n = 0', () => {
    expect(passAtK(3, 2, 4)).toBeNull();
    expect(passHatK(3, 2, 4)).toBeNull();
    expect(passAtK(0, 0, 1)).toBeNull();
    expect(passHatK(0, 0, 1)).toBeNull();
  });

  it('stay finite for large n (no factorial overflow)', () => {
    expect(passAtK(1000, 500, 512)).toBeCloseTo(1, 12);
    expect(passHatK(1000, 1000, 1000)).toBe(1);
    expect(passHatK(1000, 999, 1000)).toBe(0);
    expect(Number.isFinite(passHatK(1000, 900, 10)!)).toBe(true);
  });
});

describe('reportedKs', () => {
  it.each([
    [1, [1]],
    [2, [1, 2]],
    [3, [1, 2, 3]],
    [4, [1, 2, 4]],
    [5, [1, 2, 4, 5]],
    [8, [1, 2, 4, 8]],
    [10, [1, 2, 4, 8, 10]],
  ])('gives every power of two up to %i trials, and the count itself: %j', (trials, ks) => {
    expect(reportedKs(trials)).toEqual(ks);
  });

  it('keys the estimators by those ks, null where k exceeds the graded trials', () => {
    // 4 trials asked, one run had no grade: n = 3.
    const e = estimators(4, 3, 2);
    expect(Object.keys(e.passAtK)).toEqual(['1', '2', '4']);
    expect(Object.keys(e.passHatK)).toEqual(['1', '2', '4']);
    expect(e.passAtK['4']).toBeNull();
    expect(e.passHatK['4']).toBeNull();
    expect(e.passAtK['2']).toBeCloseTo(1, 12);
    expect(e.passHatK['2']).toBeCloseTo(1 / 3, 12);
  });
});

describe('wilson95', () => {
  /** The Wilson score interval, written out from its formula with z = Φ⁻¹(0.975). */
  function reference(c: number, n: number): [number, number] {
    const z = 1.96;
    const p = c / n;
    const centre = p + (z * z) / (2 * n);
    const spread = z * Math.sqrt((p * (1 - p) + (z * z) / (4 * n)) / n);
    const scale = 1 + (z * z) / n;
    return [(centre - spread) / scale, (centre + spread) / scale];
  }

  it.each([
    [0, 10, [0, 0.2775]],
    [10, 10, [0.7225, 1]],
    [5, 10, [0.2366, 0.7634]],
    [1, 1, [0.2065, 1]],
    [80, 100, [0.7112, 0.8666]],
  ])('gives %i of %i → %j to 4 decimals', (c, n, expected) => {
    const interval = wilson95(c, n)!;
    expect(interval[0]).toBeCloseTo(expected[0]!, 4);
    expect(interval[1]).toBeCloseTo(expected[1]!, 4);
    // and agrees with the formula written out independently
    const ref = reference(c, n);
    expect(interval[0]).toBeCloseTo(ref[0], 4);
    expect(interval[1]).toBeCloseTo(ref[1], 4);
  });

  it('holds the pass rate and stays within [0, 1] for every c of small n', () => {
    for (let n = 1; n <= 30; n++) {
      for (let c = 0; c <= n; c++) {
        const [low, high] = wilson95(c, n)!;
        expect(low).toBeGreaterThanOrEqual(0);
        expect(high).toBeLessThanOrEqual(1);
        expect(low).toBeLessThanOrEqual(c / n + 1e-12);
        expect(high).toBeGreaterThanOrEqual(c / n - 1e-12);
      }
    }
  });

  it('is null with no graded runs', () => {
    expect(wilson95(0, 0)).toBeNull();
    // Exact at the edges: nothing passed means a lower bound of 0, everything passed an upper of 1.
    expect(wilson95(0, 10)![0]).toBe(0);
    expect(wilson95(10, 10)![1]).toBe(1);
  });
});

describe('percentile (nearest rank)', () => {
  it('takes the value at rank ⌈p/100 · N⌉ of the sorted values, whatever their order', () => {
    const values = [50, 10, 40, 20, 30];
    expect(percentile(values, 50)).toBe(30);
    expect(percentile(values, 95)).toBe(50);
    expect(percentile(values, 20)).toBe(10);
    expect(percentile(values, 21)).toBe(20);
    expect(percentile(values, 100)).toBe(50);
    expect(percentile(values, 0)).toBe(10);
  });

  it('of 1..100 gives p itself, and never interpolates', () => {
    const values = Array.from({ length: 100 }, (_, i) => 100 - i);
    expect(percentile(values, 50)).toBe(50);
    expect(percentile(values, 95)).toBe(95);
    expect(percentile([1, 2], 50)).toBe(1);
    expect(percentile([1, 2], 51)).toBe(2);
  });

  it('of one value is that value; of none, null', () => {
    expect(percentile([7], 50)).toBe(7);
    expect(percentile([7], 95)).toBe(7);
    expect(percentile([], 50)).toBeNull();
  });

  it('does not reorder its input', () => {
    const values = [3, 1, 2];
    percentile(values, 50);
    expect(values).toEqual([3, 1, 2]);
  });
});
