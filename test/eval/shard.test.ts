/** `--shard i/n`: parsing, and a split that is disjoint, complete and balanced. */
import { describe, expect, it } from 'vitest';
import { inShard, parseShard } from '../../src/eval/shard.js';

describe('parseShard', () => {
  it('reads i/n', () => {
    expect(parseShard('2/3')).toEqual({ index: 2, count: 3 });
    expect(parseShard(' 1 / 1 ')).toEqual({ index: 1, count: 1 });
  });

  it.each(['0/3', '4/3', '3', 'a/b', '1/0', '-1/2', '1.5/3', ''])('refuses %j with a usage error that shows the form', (text) => {
    expect(() => parseShard(text)).toThrow(/--shard takes i\/n with 1 <= i <= n, e.g. --shard 2\/3/);
  });
});

describe('inShard', () => {
  const shardsOf = (task: number, trial: number, count: number): number[] =>
    Array.from({ length: count }, (_, i) => i + 1).filter((index) => inShard(task, trial, { index, count }));

  it('gives every (task, trial) pair to exactly one of n shards', () => {
    for (const count of [1, 2, 3, 7]) {
      for (let task = 0; task < 12; task++) {
        for (let trial = 0; trial < 9; trial++) expect(shardsOf(task, trial, count)).toHaveLength(1);
      }
    }
  });

  it('gives every shard trials of every task when there are at least n trials, even when n divides the task count', () => {
    // 4 tasks, 3 trials, 2 shards: numbering the pairs in one sequence gave shard 1 tasks 0 and 2 only.
    for (const [tasks, trials, count] of [[4, 3, 2], [6, 3, 3], [4, 4, 4], [5, 2, 2], [3, 8, 4]] as const) {
      for (let index = 1; index <= count; index++) {
        for (let task = 0; task < tasks; task++) {
          const mine = Array.from({ length: trials }, (_, trial) => trial).filter((trial) => inShard(task, trial, { index, count }));
          // Each task's trials are dealt round the shards: ⌊k/n⌋ or ⌈k/n⌉ each.
          expect(mine.length).toBeGreaterThanOrEqual(Math.floor(trials / count));
          expect(mine.length).toBeLessThanOrEqual(Math.ceil(trials / count));
        }
      }
    }
  });

  it('keeps the shards within one pair of each other per trial', () => {
    for (const [tasks, trials, count] of [[4, 3, 2], [7, 5, 3], [10, 1, 4]] as const) {
      for (let trial = 0; trial < trials; trial++) {
        const sizes = Array.from({ length: count }, (_, i) => Array.from({ length: tasks }, (_, t) => t).filter((t) => inShard(t, trial, { index: i + 1, count })).length);
        expect(Math.max(...sizes) - Math.min(...sizes)).toBeLessThanOrEqual(1);
      }
    }
  });

  it('keeps every pair when there is no shard', () => {
    expect(inShard(5, 2, undefined)).toBe(true);
  });
});
