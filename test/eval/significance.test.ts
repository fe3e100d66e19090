/**
 * The comparison's statistics against independent computations: Fisher's exact test against an
 * enumeration of every table with the same margins in exact integer arithmetic (and published
 * values), Holm's correction against the procedure done by hand, and the bootstrap against what a
 * mean's interval must look like.
 */
import { describe, expect, it } from 'vitest';
import { bootstrapMeanCi95, fisherExact, holm, quantile } from '../../src/eval/significance.js';

/** n choose k, exactly. */
function choose(n: number, k: number): bigint {
  if (k < 0 || k > n) return 0n;
  let r = 1n;
  for (let i = 1; i <= k; i++) r = (r * BigInt(n - k + i)) / BigInt(i);
  return r;
}

/**
 * The two-sided p-value by brute force: every table with the observed margins, its probability as
 * an exact fraction C(r1, x)·C(r2, c1 − x) / C(n, c1), and the sum of those no more likely than
 * the observed one (compared exactly, as integers over the same denominator).
 */
function bruteForceP(a: number, b: number, c: number, d: number): number {
  const r1 = a + b;
  const r2 = c + d;
  const c1 = a + c;
  const weight = (x: number): bigint => choose(r1, x) * choose(r2, c1 - x);
  const observed = weight(a);
  let sum = 0n;
  for (let x = 0; x <= r1; x++) {
    const w = weight(x);
    if (w > 0n && w <= observed) sum += w;
  }
  const total = choose(r1 + r2, c1);
  // A float of the exact fraction: scale, divide, then back.
  return Number((sum * 10n ** 15n) / total) / 1e15;
}

describe('fisherExact', () => {
  it('matches published values', () => {
    // Wikipedia's example (men and women, studying or not): p = 0.002759.
    expect(fisherExact(1, 9, 11, 3)).toBeCloseTo(0.002759, 6);
    // Fisher's lady tasting tea, 3 of 4 right: two-sided p = 34/70 = 0.4857 (R: fisher.test).
    expect(fisherExact(3, 1, 1, 3)).toBeCloseTo(34 / 70, 12);
    // 8/8 against 0/8: 2 / C(16, 8).
    expect(fisherExact(8, 0, 0, 8)).toBeCloseTo(2 / 12870, 15);
  });

  it('equals the enumeration of every table with the same margins, for every table with rows up to 9', () => {
    let compared = 0;
    for (let r1 = 0; r1 <= 9; r1++) {
      for (let r2 = 0; r2 <= 9; r2++) {
        for (let a = 0; a <= r1; a++) {
          for (let c = 0; c <= r2; c++) {
            const p = fisherExact(a, r1 - a, c, r2 - c);
            const brute = r1 + r2 === 0 ? 1 : bruteForceP(a, r1 - a, c, r2 - c);
            expect(Math.abs(p - brute), `[[${a}, ${r1 - a}], [${c}, ${r2 - c}]]`).toBeLessThan(1e-9);
            compared++;
          }
        }
      }
    }
    expect(compared).toBe(3025);
  });

  it('equals the enumeration on large tables too', () => {
    for (const [a, b, c, d] of [
      [40, 10, 25, 25],
      [100, 0, 97, 3],
      [3, 197, 12, 188],
      [250, 250, 240, 260],
    ] as const) {
      expect(Math.abs(fisherExact(a, b, c, d) - bruteForceP(a, b, c, d))).toBeLessThan(1e-9);
    }
  });

  it('is symmetric in the rows and in the columns, and 1 for an empty row or column', () => {
    expect(fisherExact(2, 5, 7, 1)).toBeCloseTo(fisherExact(7, 1, 2, 5), 14);
    expect(fisherExact(2, 5, 7, 1)).toBeCloseTo(fisherExact(5, 2, 1, 7), 14);
    expect(fisherExact(0, 0, 3, 4)).toBe(1);
    expect(fisherExact(4, 0, 3, 0)).toBe(1);
    expect(fisherExact(4, 4, 4, 4)).toBe(1);
  });

  it('refuses what is not a count', () => {
    expect(() => fisherExact(1.5, 0, 0, 0)).toThrow(/non-negative integers/);
    expect(() => fisherExact(-1, 0, 0, 0)).toThrow(/non-negative integers/);
  });
});

describe('holm', () => {
  it('does what the procedure does by hand', () => {
    // Sorted: 0.005 (×4 = 0.02), 0.01 (×3 = 0.03), 0.03 (×2 = 0.06), 0.04 (×1 = 0.04, raised to 0.06).
    const adjusted = holm([0.01, 0.04, 0.03, 0.005]);
    expect(adjusted.map((p) => Number(p.toFixed(10)))).toEqual([0.03, 0.06, 0.06, 0.02]);
  });

  it('caps at 1, keeps ties in order, and handles none and one', () => {
    expect(holm([0.5, 0.5, 0.9])).toEqual([1, 1, 1]);
    expect(holm([0.01, 0.01])).toEqual([0.02, 0.02]);
    expect(holm([])).toEqual([]);
    expect(holm([0.03])).toEqual([0.03]);
  });

  it('never lowers a p-value and keeps the order of the raw ones', () => {
    const ps = [0.2, 0.001, 0.04, 0.0049, 0.7, 0.012, 0.05];
    const adjusted = holm(ps);
    ps.forEach((p, i) => expect(adjusted[i]).toBeGreaterThanOrEqual(p));
    const byRaw = ps.map((p, i) => [p, adjusted[i]!] as const).sort((x, y) => x[0] - y[0]);
    for (let i = 1; i < byRaw.length; i++) expect(byRaw[i]![1]).toBeGreaterThanOrEqual(byRaw[i - 1]![1]);
  });
});

describe('bootstrapMeanCi95', () => {
  it('is reproducible for a seed and differs between seeds', () => {
    const values = Array.from({ length: 50 }, (_, i) => ((i * 37) % 11) / 10 - 0.5);
    expect(bootstrapMeanCi95(values, 7, 2000)).toEqual(bootstrapMeanCi95(values, 7, 2000));
    expect(bootstrapMeanCi95(values, 7, 2000)).not.toEqual(bootstrapMeanCi95(values, 8, 2000));
  });

  it('is a point for constant values, null for none', () => {
    expect(bootstrapMeanCi95([0.25, 0.25, 0.25], 1, 500)).toEqual([0.25, 0.25]);
    expect(bootstrapMeanCi95([], 1, 500)).toBeNull();
  });

  it('is close to the normal interval of a mean of many values', () => {
    const values = Array.from({ length: 400 }, (_, i) => (i % 4 === 0 ? 1 : 0) - (i % 10 === 0 ? 1 : 0));
    const n = values.length;
    const m = values.reduce((s, v) => s + v, 0) / n;
    const sd = Math.sqrt(values.reduce((s, v) => s + (v - m) ** 2, 0) / (n - 1));
    const [low, high] = bootstrapMeanCi95(values, 3, 20_000)!;
    const half = (1.96 * sd) / Math.sqrt(n);
    expect(low).toBeCloseTo(m - half, 2);
    expect(high).toBeCloseTo(m + half, 2);
    expect(low).toBeLessThan(m);
    expect(high).toBeGreaterThan(m);
  });

  it('quantile interpolates between ranks', () => {
    expect(quantile([1, 2, 3, 4], 0.5)).toBe(2.5);
    expect(quantile([1, 2, 3, 4], 0)).toBe(1);
    expect(quantile([1, 2, 3, 4], 1)).toBe(4);
  });
});
