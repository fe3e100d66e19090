/**
 * mergeEvals: shards of one eval become the eval an unsharded run would have written (statistics,
 * run lines, run folders), and anything that is not the finished shards 1..n of one eval is refused.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { mergeEvals } from '../../src/eval/merge.js';
import { EvalStore } from '../../src/eval/store.js';
import { runEval } from '../../src/index.js';
import { tempDir } from '../helpers.js';
import { statistics } from './statistics.js';

const tmp = tempDir('silo-merge-');
afterAll(() => tmp.remove());

const HELPDESK = 'fixtures/helpdesk/tasks.ts';
/** Passes 1 of the 6 helpdesk tasks, every time. */
const HALLUCINATOR = 'fixtures/agents/hallucinator.ts';

const shardOf = (index: number, count: number, evalId?: string) =>
  runEval({ paths: [HELPDESK], agent: HALLUCINATOR, trials: 2, outDir: join(tmp.dir, `shard-${index}-of-${count}${evalId ?? ''}`), shard: { index, count }, ...(evalId ? { evalId } : {}) });

describe('mergeEvals', async () => {
  const unsharded = await runEval({ paths: [HELPDESK], agent: HALLUCINATOR, trials: 2, outDir: join(tmp.dir, 'unsharded') });
  const shards = await Promise.all([1, 2, 3].map((i) => shardOf(i, 3, 'ci-7')));
  const dirs = [1, 2, 3].map((i) => join(tmp.dir, `shard-${i}-of-3ci-7`));

  it('splits the 12 pairs 4/4/4, each shard recording its shard and listing every task', () => {
    expect(shards.map((s) => s.totals.runs)).toEqual([4, 4, 4]);
    expect(shards.map((s) => s.options.shard)).toEqual([1, 2, 3].map((index) => ({ index, count: 3 })));
    for (const s of shards) expect(s.tasks.map((t) => t.taskId)).toEqual(unsharded.tasks.map((t) => t.taskId));
  });

  it('gives the statistics of the unsharded eval, under the shared evalId, with every run line and folder', async () => {
    const out = join(tmp.dir, 'merged');
    const merged = await mergeEvals({ dirs: [dirs[2]!, dirs[0]!, dirs[1]!], outDir: out });
    expect(merged.evalId).toBe('ci-7');
    expect(statistics(merged)).toEqual(statistics(unsharded));
    expect(merged.options.shard).toBeUndefined();
    const store = new EvalStore(out, 'ci-7');
    expect(JSON.parse(readFileSync(store.summaryFile, 'utf8'))).toEqual(merged);
    const lines = [...store.readLines()];
    expect(lines).toHaveLength(12);
    for (const line of lines) expect(existsSync(join(out, 'runs', line.runId, 'result.json'))).toBe(true);
  });

  it('takes a fresh evalId when the shards have different ones, and --eval-id when given', async () => {
    const own = await Promise.all([1, 2].map((i) => shardOf(i, 2)));
    const ownDirs = [1, 2].map((i) => join(tmp.dir, `shard-${i}-of-2`));
    const merged = await mergeEvals({ dirs: ownDirs, outDir: join(tmp.dir, 'merged-fresh') });
    expect(own.map((s) => s.evalId)).not.toContain(merged.evalId);
    expect(statistics(merged)).toEqual(statistics(unsharded));
    const named = await mergeEvals({ dirs: ownDirs, outDir: join(tmp.dir, 'merged-named'), evalId: 'nightly-3' });
    expect(named.evalId).toBe('nightly-3');
  });

  it('refuses a missing shard, a shard given twice, an eval that is not a shard, and an existing merged eval', async () => {
    await expect(mergeEvals({ dirs: dirs.slice(0, 2), outDir: join(tmp.dir, 'x1') })).rejects.toThrow('shard 3/3 missing; give all 3 shards');
    await expect(mergeEvals({ dirs: [dirs[0]!, dirs[0]!, dirs[1]!], outDir: join(tmp.dir, 'x2') })).rejects.toThrow(/shard 1\/3 is given twice/);
    await expect(mergeEvals({ dirs: [join(tmp.dir, 'unsharded')], outDir: join(tmp.dir, 'x3') })).rejects.toThrow(/is not a shard; merge the outputs of `silo eval --shard i\/n`/);
    await expect(mergeEvals({ dirs, outDir: join(tmp.dir, 'merged') })).rejects.toThrow(/an eval ci-7 already exists in .*; merge into another --out folder, or give --eval-id/);
    await expect(mergeEvals({ dirs: [join(tmp.dir, 'nothing-here')], outDir: join(tmp.dir, 'x4') })).rejects.toThrow(/holds no eval; give the --out folder/);
  });

  it('refuses an unfinished shard and says how to finish it', async () => {
    const summaryFile = new EvalStore(dirs[1]!, 'ci-7').summaryFile;
    const text = readFileSync(summaryFile, 'utf8');
    writeFileSync(summaryFile, JSON.stringify({ ...JSON.parse(text), status: 'cancelled' }));
    try {
      await expect(mergeEvals({ dirs, outDir: join(tmp.dir, 'x5') })).rejects.toThrow(`is cancelled; finish it with \`silo eval --resume ci-7 --out ${dirs[1]}\` first`);
    } finally {
      writeFileSync(summaryFile, text);
    }
  });

  it('refuses shards of different evals', async () => {
    const other = await runEval({ paths: [HELPDESK], agent: HALLUCINATOR, trials: 1, outDir: join(tmp.dir, 'other'), shard: { index: 3, count: 3 } });
    expect(other.options.shard).toEqual({ index: 3, count: 3 });
    await expect(mergeEvals({ dirs: [dirs[0]!, dirs[1]!, join(tmp.dir, 'other')], outDir: join(tmp.dir, 'x6') })).rejects.toThrow(/differ in their options \(trials, filters, limits, retries or --strict\); they are not shards of one eval/);
  });
});

describe('runEval --eval-id', () => {
  it('refuses an id that is taken or is not a folder name', async () => {
    const out = join(tmp.dir, 'ids');
    await runEval({ paths: [HELPDESK], agent: HALLUCINATOR, task: ['helpdesk/close-ticket'], outDir: out, evalId: 'mine' });
    await expect(runEval({ paths: [HELPDESK], agent: HALLUCINATOR, outDir: out, evalId: 'mine' })).rejects.toThrow(/an eval mine already exists in .*; continue it with --resume mine/);
    await expect(runEval({ paths: [HELPDESK], agent: HALLUCINATOR, outDir: out, evalId: '../up' })).rejects.toThrow(/--eval-id takes letters, digits/);
  });
});
