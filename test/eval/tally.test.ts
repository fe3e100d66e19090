/**
 * The eval's running tally: which run lines count as trials, how errors, retries and cancels are
 * kept apart, and the per-task and total statistics it derives.
 */
import { describe, expect, it } from 'vitest';
import { Tally } from '../../src/eval/tally.js';
import { wilson95 } from '../../src/eval/stats.js';
import type { EvalRunLine } from '../../src/types.js';

let seq = 0;

/** A run line; passed/failed runs are graded (score 1/0 by default), error runs are not. */
function line(taskId: string, status: EvalRunLine['status'], extra: Partial<EvalRunLine> = {}): EvalRunLine {
  return {
    runId: `RUN${seq++}`,
    taskId,
    trial: 0,
    status,
    score: status === 'error' ? null : status === 'passed' ? 1 : 0,
    termination: status === 'error' ? 'crashed' : 'returned',
    durationMs: 100,
    ...extra,
  };
}

function tallyOf(taskIds: string[], lines: EvalRunLine[]): Tally {
  const tally = new Tally(taskIds);
  for (const l of lines) tally.add(l);
  return tally;
}

describe('Tally', () => {
  it('counts passed, failed and errors per task, in the order the tasks were given', () => {
    const tally = tallyOf(
      ['b', 'a'],
      [line('a', 'passed'), line('a', 'failed'), line('a', 'error'), line('b', 'passed'), line('b', 'passed')],
    );
    const { tasks } = tally.stats(3);
    expect(tasks.map((t) => t.taskId)).toEqual(['b', 'a']);
    expect(tasks[1]).toMatchObject({ taskId: 'a', trials: 3, passed: 1, failed: 1, errors: 1 });
    expect(tasks[0]).toMatchObject({ taskId: 'b', trials: 2, passed: 2, failed: 0, errors: 0 });
    expect(tally.counts()).toEqual({ done: 5, passed: 3, failed: 1, errors: 1 });
  });

  it('excludes errors from n: passRate = passed / graded, and pass@k uses the graded runs only', () => {
    const tally = tallyOf(['t'], [line('t', 'passed'), line('t', 'failed'), line('t', 'error'), line('t', 'error')]);
    const [t] = tally.stats(4).tasks;
    expect(t!.passRate).toBe(0.5);
    // n = 2 graded trials: k = 4 cannot be drawn.
    expect(t!.passAtK).toEqual({ '1': 0.5, '2': 1, '4': null });
    expect(t!.passHatK).toEqual({ '1': 0.5, '2': 0, '4': null });
  });

  it('gives null rates and scores to a task with no graded run (all errors, or no run yet)', () => {
    const tally = tallyOf(['errs', 'none'], [line('errs', 'error')]);
    const [errs, none] = tally.stats(2).tasks;
    for (const t of [errs!, none!]) {
      expect(t.passRate).toBeNull();
      expect(t.meanScore).toBeNull();
      expect(t.passAtK).toEqual({ '1': null, '2': null });
      expect(t.flaky).toBe(false);
    }
    expect(errs!.errors).toBe(1);
    expect(none).toMatchObject({ trials: 0, p50Ms: null, p95Ms: null });
  });

  it('does not count retried runs as trials, but counts them as retries', () => {
    const tally = tallyOf(
      ['t'],
      [line('t', 'error', { retried: true }), line('t', 'error', { retried: true }), line('t', 'passed')],
    );
    const stats = tally.stats(1);
    expect(stats.tasks[0]).toMatchObject({ trials: 1, passed: 1, errors: 0 });
    expect(stats.totals).toMatchObject({ runs: 1, passed: 1, errors: 0, retries: 2 });
    expect(tally.retries).toBe(2);
    expect(tally.counts().done).toBe(1);
  });

  it('does not count cancelled runs at all', () => {
    const tally = tallyOf(
      ['t'],
      [line('t', 'passed'), line('t', 'error', { termination: 'cancelled', error: { code: 'cancelled', message: 'the rollout was cancelled' } })],
    );
    const stats = tally.stats(2);
    expect(stats.tasks[0]).toMatchObject({ trials: 1, passed: 1, errors: 0 });
    expect(stats.totals).toMatchObject({ runs: 1, errors: 0, retries: 0 });
  });

  it('ignores lines of tasks it was not given', () => {
    const tally = tallyOf(['t'], [line('other', 'passed')]);
    expect(tally.counts().done).toBe(0);
  });

  it('flags a task flaky only when it both passed and failed (errors do not make it flaky)', () => {
    const tally = tallyOf(
      ['mixed', 'always', 'never', 'witherror'],
      [
        line('mixed', 'passed'),
        line('mixed', 'failed'),
        line('always', 'passed'),
        line('always', 'passed'),
        line('never', 'failed'),
        line('witherror', 'passed'),
        line('witherror', 'error'),
      ],
    );
    expect(tally.stats(2).tasks.map((t) => [t.taskId, t.flaky])).toEqual([
      ['mixed', true],
      ['always', false],
      ['never', false],
      ['witherror', false],
    ]);
  });

  it('averages the score over graded runs only', () => {
    const tally = tallyOf(
      ['t'],
      [line('t', 'passed', { score: 1 }), line('t', 'failed', { score: 0.5 }), line('t', 'failed', { score: 0 }), line('t', 'error')],
    );
    expect(tally.stats(4).tasks[0]!.meanScore).toBeCloseTo(0.5, 12);
  });

  it('takes p50/p95 of the runs’ durations by nearest rank', () => {
    const durations = [500, 100, 300, 200, 400, 900, 800, 700, 600, 1000];
    const tally = tallyOf(
      ['t'],
      durations.map((durationMs) => line('t', 'passed', { durationMs })),
    );
    const [t] = tally.stats(10).tasks;
    expect(t!.p50Ms).toBe(500);
    expect(t!.p95Ms).toBe(1000);
  });

  it('keeps retried and cancelled runs out of the percentiles', () => {
    const tally = tallyOf(
      ['t'],
      [
        line('t', 'passed', { durationMs: 10 }),
        line('t', 'error', { durationMs: 99_999, retried: true }),
        line('t', 'error', { durationMs: 88_888, termination: 'cancelled' }),
      ],
    );
    expect(tally.stats(1).tasks[0]).toMatchObject({ p50Ms: 10, p95Ms: 10 });
  });

  it('sums the totals over tasks, with the Wilson interval of the total pass rate over graded runs', () => {
    const tally = tallyOf(
      ['a', 'b'],
      [
        line('a', 'passed'),
        line('a', 'passed'),
        line('a', 'failed'),
        line('b', 'passed'),
        line('b', 'error'),
        line('b', 'error', { retried: true }),
      ],
    );
    const { totals } = tally.stats(3);
    expect(totals).toEqual({
      runs: 5,
      passed: 3,
      failed: 1,
      errors: 1,
      retries: 1,
      suspicious: 0,
      passRate: 0.75,
      passRateCi95: wilson95(3, 4),
    });
    expect(totals.passRateCi95![0]).toBeLessThan(0.75);
    expect(totals.passRateCi95![1]).toBeGreaterThan(0.75);
  });

  it('totals model tokens per task and overall, retried and errored runs included (they were paid for)', () => {
    const usage = (n: number) => ({ usage: { inputTokens: 10 * n, outputTokens: n, requests: 1 } });
    const tally = tallyOf(['a', 'b', 'c'], [line('a', 'passed', usage(1)), line('a', 'error', { ...usage(2), retried: true }), line('a', 'failed', usage(3)), line('b', 'passed', usage(4)), line('c', 'passed')]);
    const { tasks, totals } = tally.stats(2);
    expect(tasks.map((t) => t.usage)).toEqual([{ inputTokens: 60, outputTokens: 6, requests: 3 }, { inputTokens: 40, outputTokens: 4, requests: 1 }, undefined]);
    expect(totals.usage).toEqual({ inputTokens: 100, outputTokens: 10, requests: 4 });
  });

  it('totals the simulated users’ tokens apart from the agents’', () => {
    const both = (n: number) => ({ usage: { inputTokens: n, outputTokens: n, requests: 1 }, userUsage: { inputTokens: 100 * n, outputTokens: 10 * n, requests: 2 } });
    const { tasks, totals } = tallyOf(['a', 'b'], [line('a', 'passed', both(1)), line('b', 'failed', both(2))]).stats(1);
    expect(tasks.map((t) => t.userUsage)).toEqual([{ inputTokens: 100, outputTokens: 10, requests: 2 }, { inputTokens: 200, outputTokens: 20, requests: 2 }]);
    expect(totals.userUsage).toEqual({ inputTokens: 300, outputTokens: 30, requests: 4 });
    expect(totals.usage).toEqual({ inputTokens: 3, outputTokens: 3, requests: 2 });
  });

  it('gives null totals rates before any graded run', () => {
    const { totals } = new Tally(['t']).stats(1);
    expect(totals).toEqual({ runs: 0, passed: 0, failed: 0, errors: 0, retries: 0, suspicious: 0, passRate: null, passRateCi95: null });
  });

  it('counts passed runs with an ungrounded answer as suspicious, per task and in all (they still pass)', () => {
    const why = 'the agent answered without a single successful tool call';
    const tally = new Tally(['a', 'b']);
    for (const l of [
      line('a', 'passed', { suspicious: why }),
      line('a', 'passed', { suspicious: why }),
      line('a', 'passed'),
      line('b', 'failed'),
      line('b', 'passed', { suspicious: why, retried: true }),
    ]) {
      tally.add(l);
    }
    const stats = tally.stats(3);
    expect(stats.tasks.map((t) => [t.taskId, t.passed, t.suspicious])).toEqual([
      ['a', 3, 2],
      ['b', 0, 0],
    ]);
    expect(stats.totals).toMatchObject({ passed: 3, suspicious: 2, passRate: 0.75 });
  });
});
