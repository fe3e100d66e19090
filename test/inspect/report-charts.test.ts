import { describe, expect, it } from 'vitest';
import { durationHistogram, escapeHtml, passRateChart, type TimedRun } from '../../src/inspect/report-charts.js';
import type { TaskStats } from '../../src/types.js';

function stats(taskId: string, passed: number, failed: number, errors = 0): TaskStats {
  const n = passed + failed;
  return {
    taskId,
    trials: n + errors,
    passed,
    failed,
    errors,
    passRate: n === 0 ? null : passed / n,
    passAtK: {},
    passHatK: {},
    meanScore: null,
    p50Ms: null,
    p95Ms: null,
    flaky: passed > 0 && failed > 0,
    suspicious: 0,
  };
}

/** The tooltips of an SVG, in order. */
function titles(svg: string): string[] {
  return [...svg.matchAll(/<title>([^<]*)<\/title>/g)].map((m) => m[1]!);
}

describe('escapeHtml', () => {
  it('escapes the five characters that matter in text and quoted attributes', () => {
    expect(escapeHtml(`<a href="x" title='y'>&</a>`)).toBe('&#60;a href=&#34;x&#34; title=&#39;y&#39;&#62;&#38;&#60;/a&#62;');
  });
});

describe('passRateChart', () => {
  it('draws one bar per task, worst first, with the rate, the counts and the interval in the tooltip', () => {
    const svg = passRateChart([stats('good', 4, 0), stats('bad', 1, 3), stats('broken', 0, 0, 2)]);
    expect(titles(svg)).toEqual(['broken: no grade, 2 errors', 'bad: 25% (1/4), 95% CI 5%–70%', 'good: 100% (4/4), 95% CI 51%–100%']);
    expect(svg).not.toMatch(/lowest pass rate/);
  });

  it('escapes task ids', () => {
    const svg = passRateChart([stats('<script>alert(1)</script>', 1, 1)]);
    expect(svg).not.toContain('<script>');
    expect(svg).toContain('&#60;script&#62;alert(1)&#60;/script&#62;');
  });

  it('draws at most maxBars tasks, those that pass least, and says how many there are', () => {
    const tasks = Array.from({ length: 100 }, (_, i) => stats(`t${i}`, i % 10, 10 - (i % 10)));
    const svg = passRateChart(tasks, 20);
    const shown = titles(svg);
    expect(shown).toHaveLength(20);
    expect(shown.every((t) => /: 0% \(0\/10\)|: 10% \(1\/10\)/.test(t))).toBe(true);
    expect(svg).toContain('The 20 tasks with the lowest pass rate of 100');
  });
});

describe('durationHistogram', () => {
  it('counts every run once, by status', () => {
    const runs: TimedRun[] = [];
    for (let i = 0; i < 300; i++) runs.push({ status: i % 3 === 0 ? 'failed' : i % 7 === 0 ? 'error' : 'passed', durationMs: 50 + i });
    const counts = { passed: 0, failed: 0, error: 0 };
    for (const t of titles(durationHistogram(runs))) {
      const m = /: (\d+) passed, (\d+) failed, (\d+) errors$/.exec(t)!;
      counts.passed += Number(m[1]);
      counts.failed += Number(m[2]);
      counts.error += Number(m[3]);
    }
    expect(counts).toEqual({
      passed: runs.filter((r) => r.status === 'passed').length,
      failed: runs.filter((r) => r.status === 'failed').length,
      error: runs.filter((r) => r.status === 'error').length,
    });
  });

  it('puts a few very slow runs in a last bin of their own instead of squashing the rest', () => {
    const runs: TimedRun[] = Array.from({ length: 500 }, (_, i) => ({ status: 'passed', durationMs: 100 + (i % 50) }));
    runs.push({ status: 'failed', durationMs: 300_000 }, { status: 'failed', durationMs: 299_000 });
    const bins = titles(durationHistogram(runs, 10));
    expect(bins).toHaveLength(10);
    expect(bins.at(-1)).toMatch(/^≥ 149ms: \d+ passed, 2 failed, 0 errors$/);
    // The other runs spread over the first bins rather than all landing in one.
    expect(bins.slice(0, -1).filter((t) => !t.includes(': 0 passed')).length).toBeGreaterThan(5);
  });

  it('says so when there are no runs', () => {
    expect(durationHistogram([])).toContain('No finished runs');
  });
});
