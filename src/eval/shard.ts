/**
 * `--shard i/n`: a deterministic 1/n of an eval's (task, trial) pairs, for CI matrices. Pairs are
 * numbered in the eval's own order (trial-major: trial 0 of every task, then trial 1, ...; tasks
 * in the order their files and exports list them), and shard i of n takes the pairs whose number
 * leaves remainder i − 1 when divided by n. Round-robin spreads every task's trials and the slow
 * tasks over the shards; the same task files, filters and trials give every machine the same split.
 */
import { SiloError } from '../errors.js';

/** Shard `index` (1-based) of `count`. */
export interface Shard {
  index: number;
  count: number;
}

/** Parses `i/n` (1 ≤ i ≤ n). */
export function parseShard(text: string): Shard {
  const m = /^\s*(\d+)\s*\/\s*(\d+)\s*$/.exec(text);
  const index = Number(m?.[1]);
  const count = Number(m?.[2]);
  if (!m || count < 1 || index < 1 || index > count || !Number.isSafeInteger(count)) {
    throw new SiloError('SILO_USAGE', `--shard takes i/n with 1 <= i <= n, e.g. --shard 2/3 (got '${text}')`);
  }
  return { index, count };
}

/** Whether pair number `position` (0-based, in eval order) belongs to `shard`. */
export function inShard(position: number, shard: Shard | undefined): boolean {
  return shard === undefined || position % shard.count === shard.index - 1;
}
