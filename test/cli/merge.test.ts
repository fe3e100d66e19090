/** `silo eval --shard` and `silo merge` as a CI matrix uses them: three shards, then one summary. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { EvalSummary } from '../../src/types.js';
import { statistics } from '../eval/statistics.js';
import { tempDir } from '../helpers.js';
import { runSilo } from './silo.js';

const tmp = tempDir('silo-cli-merge-');
afterAll(() => tmp.remove());

const EVAL = ['eval', 'fixtures/helpdesk', '--agent', 'fixtures/agents/hallucinator.ts', '--trials', '2', '--reporter', 'json'];

describe('silo eval --shard and silo merge', () => {
  it('three shards merged give the summary of the unsharded eval', async () => {
    const [unsharded, ...shards] = await Promise.all([
      runSilo([...EVAL, '--out', join(tmp.dir, 'all')]),
      ...[1, 2, 3].map((i) => runSilo([...EVAL, '--shard', `${i}/3`, '--eval-id', 'matrix-1', '--out', join(tmp.dir, `shard-${i}`)])),
    ]);
    for (const r of [unsharded!, ...shards]) expect(r.code, r.stderr).toBe(1); // the hallucinator fails 5 of 6 tasks
    expect(shards.map((r) => (JSON.parse(r.stdout) as EvalSummary).totals.runs)).toEqual([4, 4, 4]);

    const merged = await runSilo(['merge', ...[3, 1, 2].map((i) => join(tmp.dir, `shard-${i}`)), '--out', join(tmp.dir, 'merged')]);
    expect(merged.code, merged.stderr).toBe(1);
    expect(merged.stdout).toMatch(/^12 runs · 2 passed · 10 failed · 0 errors · pass rate 16\.7%/m);
    expect(merged.stdout).toContain('eval matrix-1');
    const summary = JSON.parse(readFileSync(join(tmp.dir, 'merged', 'evals', 'matrix-1', 'summary.json'), 'utf8')) as EvalSummary;
    expect(statistics(summary)).toEqual(statistics(JSON.parse(unsharded!.stdout) as EvalSummary));
  });

  it('refuses a bad --shard, and a merge with a shard missing, with one line and exit 2', async () => {
    const bad = await runSilo([...EVAL, '--shard', '4/3', '--out', join(tmp.dir, 'bad')]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe("silo: --shard takes i/n with 1 <= i <= n, e.g. --shard 2/3 (got '4/3')\n");
    const missing = await runSilo(['merge', join(tmp.dir, 'shard-1'), join(tmp.dir, 'shard-2'), '--out', join(tmp.dir, 'm2')]);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toBe('silo: shard 3/3 missing; give all 3 shards\n');
  });
});
