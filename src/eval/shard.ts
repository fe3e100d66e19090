/**
 * `--shard i/n`: a deterministic 1/n of an eval's (task, trial) pairs, for CI matrices. With tasks
 * numbered t = 0, 1, ... in the order their files and exports list them, shard i of n takes the
 * pairs (t, trial) where t + trial leaves remainder i − 1 when divided by n. Each task's trials
 * are dealt round the shards (trial 0 of task t to shard t mod n, trial 1 to the next shard, ...),
 * so with at least n trials every shard runs trials of every task, and each trial's tasks are dealt
 * round the shards too, so shard sizes differ by at most one per trial and slow tasks are spread.
 * (Numbering the pairs in one sequence and dealing them round-robin, as a first version did, gave
 * each shard whole tasks whenever the task count was a multiple of n.) The same task files,
 * filters and trials give every machine the same split.
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

/** Whether trial `trial` of the task at `taskIndex` (both 0-based) belongs to `shard`. */
export function inShard(taskIndex: number, trial: number, shard: Shard | undefined): boolean {
  return shard === undefined || (taskIndex + trial) % shard.count === shard.index - 1;
}
