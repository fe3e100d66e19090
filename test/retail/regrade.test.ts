/**
 * regrade on the retail world (tracked writes, a ~1.6 MB world) with the oracle: every run's
 * rebuilt final world is the one its verifier saw at run time (each verifier also records a hash of
 * its `final` and `initial`, so the regrade's hashes are compared with the rollout's); an unchanged
 * verifier keeps every status; a changed verifier changes exactly the runs a fresh eval changes.
 *
 * A sample by default (the 20 dev tasks); SILO_RETAIL_ALL=1 runs all 635. The oracle is trusted,
 * so its rollouts reuse warm workers. Workers run the built code: `npm run build` first.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { regrade, runEval, type RegradeReport } from '../../src/index.js';
import { EvalStore } from '../../src/eval/store.js';
import type { EvalRunLine, EvalSummary, ResultRecord } from '../../src/types.js';
import { tempDir } from '../helpers.js';

const ALL = process.env.SILO_RETAIL_ALL === '1';
const SAMPLE = ALL ? [] : ['retail/dev/*'];
const ORACLE = 'fixtures/retail/gold/oracle.ts';
const ROOT = resolve('.');

const tmp = tempDir('silo-retail-regrade-');
afterAll(() => tmp.remove());
writeFileSync(join(tmp.dir, 'package.json'), '{ "type": "module" }\n');

/**
 * The retail tasks, each verifier also recording hashes of the worlds it got. `v2` changes the
 * grading of some tasks both ways: every fifth task (by position) must also thank the customer
 * (the oracle never does: passed → failed); v1 had a bug on every seventh task (a made-up expected
 * output, so the oracle failed it) that v2 fixes (failed → passed).
 */
function writeRetail(version: 'v1' | 'v2'): string {
  const file = join(tmp.dir, 'tasks.ts');
  writeFileSync(
    file,
    `import { createHash } from 'node:crypto';
import tasks from '${ROOT}/fixtures/retail/tasks.ts';
const v2 = ${version === 'v2'};
// Keys sorted: applying a diff keeps an edited object's key order, which a tool that rebuilt the object may have changed.
const sorted = (_k, v) => (v && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]])) : v);
const hash = (world) => createHash('sha256').update(JSON.stringify(world, sorted)).digest('hex');
export default tasks.map((t, i) => ({
  ...t,
  verify: async (args) => {
    const checks = await t.verify(args);
    if (v2 && i % 5 === 0) checks.push({ name: 'thanks the customer', pass: /thank you/i.test(args.output ?? '') });
    if (!v2 && i % 7 === 0) checks.push({ name: 'answer contains "9,999"', pass: (args.output ?? '').includes('9,999') });
    return [...checks, { name: 'final world', pass: true, actual: hash(args.final) }, { name: 'initial world', pass: true, actual: hash(args.initial) }];
  },
}));
`,
  );
  return file;
}

const outOf = (name: string) => join(tmp.dir, name);
const lines = (out: string, evalId: string): EvalRunLine[] => [...new EvalStore(out, evalId).readLines()];
const result = (out: string, runId: string, name = 'result.json'): ResultRecord =>
  JSON.parse(readFileSync(join(out, 'runs', runId, name), 'utf8')) as ResultRecord;
const actual = (r: ResultRecord, name: string): unknown => r.checks.find((c) => c.name === name)?.actual;
/** The status of the run that counts, by (task, trial). */
const statuses = (out: string, evalId: string) => new Map(lines(out, evalId).filter((l) => !l.retried).map((l) => [`${l.taskId}#${l.trial}`, l.status]));

describe('regrade on retail', () => {
  const out = outOf('v1');
  let v1: EvalSummary;
  let unchanged: RegradeReport;

  beforeAll(async () => {
    v1 = await runEval({ paths: [writeRetail('v1')], agent: ORACLE, task: SAMPLE, outDir: out, isolation: 'thread', concurrency: 16, reuseWorkers: true });
    unchanged = await regrade({ target: v1.evalId, outDir: out });
  }, ALL ? 1_800_000 : 180_000);

  it('rebuilds, for every run, the final and initial worlds its verifier saw at run time', () => {
    expect(v1.totals.runs).toBe(ALL ? 635 : 20);
    expect(unchanged.refused).toEqual([]);
    // Runs retried after an infrastructure failure (under heavy load) are regraded too.
    expect(unchanged.runs).toBe(lines(out, v1.evalId).length);
    for (const line of lines(out, v1.evalId)) {
      const then = result(out, line.runId, 'result.1.json');
      const now = result(out, line.runId);
      expect(actual(now, 'final world'), line.taskId).toBe(actual(then, 'final world'));
      expect(actual(now, 'initial world'), line.taskId).toBe(actual(then, 'initial world'));
    }
    // The oracle changed the world in most tasks: the final hashes are not just the initial ones.
    const moved = lines(out, v1.evalId).filter((l) => actual(result(out, l.runId), 'final world') !== actual(result(out, l.runId), 'initial world'));
    expect(moved.length).toBeGreaterThan(v1.totals.runs / 2);
  });

  it('with the verifier unchanged, every run keeps its status and its checks', () => {
    expect(unchanged.changed).toEqual([]);
    for (const line of lines(out, v1.evalId)) {
      expect(result(out, line.runId).checks).toEqual(result(out, line.runId, 'result.1.json').checks);
    }
    const summary = new EvalStore(out, v1.evalId).readSummary();
    expect(summary.tasks).toEqual(v1.tasks);
  });

  it('with a changed verifier, changes exactly the runs a fresh eval changes', async () => {
    const before = statuses(out, v1.evalId);
    writeRetail('v2');
    const report = await regrade({ target: v1.evalId, outDir: out });
    const fresh = await runEval({ paths: [join(tmp.dir, 'tasks.ts')], agent: ORACLE, task: SAMPLE, outDir: outOf('fresh'), isolation: 'thread', concurrency: 16, reuseWorkers: true });
    const after = statuses(outOf('fresh'), fresh.evalId);
    expect(statuses(out, v1.evalId)).toEqual(after);
    const moved = [...before].filter(([pair, status]) => after.get(pair) !== status).map(([pair]) => pair).sort();
    expect(report.changed.filter((c) => !c.retried).map((c) => `${c.taskId}#${c.trial}`).sort()).toEqual(moved);
    // Both ways, so the test means something.
    expect(report.changed.some((c) => c.to === 'failed')).toBe(true);
    expect(report.changed.some((c) => c.to === 'passed')).toBe(true);
    const regraded = new EvalStore(out, v1.evalId).readSummary();
    expect(regraded.totals).toMatchObject({ passed: fresh.totals.passed, failed: fresh.totals.failed, errors: 0 });
  }, ALL ? 1_800_000 : 180_000);
});

