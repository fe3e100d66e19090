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
  it('gives every pair to exactly one of n shards, round-robin', () => {
    for (const count of [1, 2, 3, 7]) {
      for (let position = 0; position < 50; position++) {
        const owners = Array.from({ length: count }, (_, i) => i + 1).filter((index) => inShard(position, { index, count }));
        expect(owners).toEqual([(position % count) + 1]);
      }
    }
  });

  it('keeps every pair when there is no shard', () => {
    expect(inShard(5, undefined)).toBe(true);
  });
});
