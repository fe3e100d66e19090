/**
 * compareEvals and `silo compare`: per-task Fisher tests with Holm's correction, the overall
 * difference with its seeded bootstrap interval, tasks only one eval has; a worse agent's
 * regressed tasks are flagged and the same agent twice flags none; `silo eval --baseline` stores
 * the comparison and `--fail-on-regression` turns a regression into exit 1.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { compareEvals, compareSummaries, regrade, runEval, type Comparison } from '../../src/index.js';
import { bootstrapMeanCi95, fisherExact, holm } from '../../src/eval/significance.js';
import { EvalStore } from '../../src/eval/store.js';
import type { EvalSummary } from '../../src/types.js';
import { runSilo } from '../cli/silo.js';
import { tempDir } from '../helpers.js';
import { writeFakeEval, type FakeRun } from '../inspect/fake-eval.js';

const tmp = tempDir('silo-compare-');
afterAll(() => tmp.remove());

/** `passed` passes and `failed` fails of a task, over that many trials. */
function runsOf(taskId: string, passed: number, failed: number, errors = 0): FakeRun[] {
  const statuses = [...Array<'passed'>(passed).fill('passed'), ...Array<'failed'>(failed).fill('failed'), ...Array<'error'>(errors).fill('error')];
  return statuses.map((status, trial) => ({ taskId, status, trial }));
}

function fake(evalId: string, runs: FakeRun[]): EvalSummary {
  const { summary } = writeFakeEval(join(tmp.dir, 'fake'), evalId, runs, { runFolders: false });
  // The fake eval's summary says one trial; these have eight.
  return { ...summary, trials: 8 };
}

describe('compareSummaries', () => {
  const a = fake('A', [...runsOf('t/falls', 8, 0), ...runsOf('t/steady', 4, 4), ...runsOf('t/rises', 0, 8), ...runsOf('t/gone', 8, 0), ...runsOf('t/ungraded', 0, 0, 8)]);
  const b = fake('B', [...runsOf('t/falls', 0, 8), ...runsOf('t/steady', 4, 4), ...runsOf('t/rises', 8, 0), ...runsOf('t/new', 1, 7), ...runsOf('t/ungraded', 3, 5)]);
  const c = compareSummaries(a, b);
  const task = (id: string) => c.tasks.find((t) => t.taskId === id)!;

  it('counts each side, takes the difference b − a, and Fisher-tests the 2×2 table', () => {
    expect(task('t/falls')).toMatchObject({ a: { n: 8, passed: 8, passRate: 1 }, b: { n: 8, passed: 0, passRate: 0 }, delta: -1 });
    expect(task('t/falls').pValue).toBeCloseTo(fisherExact(8, 0, 0, 8), 15);
    expect(task('t/steady')).toMatchObject({ delta: 0, pValue: 1, verdict: 'same' });
    expect(task('t/rises').delta).toBe(1);
  });

  it('corrects across the tasks tested with Holm, and calls the verdicts on the corrected p-value', () => {
    const tested = ['t/falls', 't/steady', 't/rises'].map(task);
    const adjusted = holm(tested.map((t) => t.pValue!));
    tested.forEach((t, i) => expect(t.pHolm).toBeCloseTo(adjusted[i]!, 15));
    expect(task('t/falls').verdict).toBe('regressed');
    expect(task('t/rises').verdict).toBe('improved');
    expect(c.overall.regressed).toEqual(['t/falls']);
    expect(c.overall.improved).toEqual(['t/rises']);
  });

  it('leaves a task with no graded run on one side untested and out of the correction', () => {
    expect(task('t/ungraded')).toMatchObject({ a: { n: 0, passRate: null }, delta: null, pValue: null, pHolm: null, verdict: 'same' });
    expect(c.overall.tasks).toBe(3);
  });

  it('lists the tasks only one eval has apart', () => {
    expect(c.onlyA).toEqual(['t/gone']);
    expect(c.onlyB).toEqual(['t/new']);
    expect(c.tasks.map((t) => t.taskId)).not.toContain('t/gone');
  });

  it('sorts tasks by significance, untested last', () => {
    expect(c.tasks.map((t) => t.taskId)).toEqual(['t/falls', 't/rises', 't/steady', 't/ungraded']);
  });

  it('gives the mean difference over the tasks tested, with the seeded bootstrap interval of the paired differences', () => {
    expect(c.overall.delta).toBe(0);
    expect(c.overall.ci95).toEqual(bootstrapMeanCi95([-1, 1, 0], 1, 10_000));
    expect(compareSummaries(a, b).overall.ci95).toEqual(c.overall.ci95);
    expect(c.a.meanPassRate).toBeCloseTo(0.5, 15);
    expect(c.b.meanPassRate).toBeCloseTo(0.5, 15);
  });

  it('puts pass^k of both side by side, per task and as a mean', () => {
    expect(Object.keys(c.a.passHatK)).toEqual(['1', '2', '4', '8']);
    expect(task('t/steady').a.passHatK['2']).toBeCloseTo((4 * 3) / (8 * 7), 15);
    expect(c.a.passHatK['8']).toBeCloseTo(1 / 3, 15); // t/falls 1, t/steady 0, t/rises 0
    expect(c.b.passHatK['8']).toBeCloseTo(1 / 3, 15);
  });
});

describe('comparing real evals', () => {
  const out = join(tmp.dir, 'real');
  let solver: EvalSummary;
  let solverAgain: EvalSummary;
  let hallucinator: EvalSummary;
  const evalOf = (agent: string) =>
    runEval({ paths: ['fixtures/helpdesk'], agent: `fixtures/agents/${agent}.ts`, trials: 6, outDir: out, isolation: 'thread', concurrency: 8 });

  beforeAll(async () => {
    solver = await evalOf('helpdesk-solver');
    solverAgain = await evalOf('helpdesk-solver');
    hallucinator = await evalOf('hallucinator');
  }, 120_000);

  it('flags exactly the tasks a worse agent fails, and none when both evals ran the same agent', () => {
    const worse = compareEvals({ a: solver.evalId, b: hallucinator.evalId, outDir: out });
    // The hallucinator closes tickets (its one trick) and fails the other five tasks, 6 times out of 6.
    expect(worse.overall.regressed.sort()).toEqual(solver.tasks.map((t) => t.taskId).filter((id) => id !== 'helpdesk/close-ticket').sort());
    expect(worse.overall.improved).toEqual([]);
    expect(worse.overall.delta).toBeCloseTo(-5 / 6, 12);
    expect(worse.overall.ci95![1]).toBeLessThan(0);

    const same = compareEvals({ a: solver.evalId, b: solverAgain.evalId, outDir: out });
    expect(same.overall).toMatchObject({ regressed: [], improved: [], delta: 0, ci95: [0, 0] });
    expect(same.tasks.every((t) => t.verdict === 'same' && t.pValue === 1)).toBe(true);
  });

  it('silo compare: a table of the tasks that moved, exit 1 on a regression, 0 without', async () => {
    const worse = await runSilo(['compare', solver.evalId, hallucinator.evalId, '--out', out]);
    expect(worse.code).toBe(1);
    expect(worse.stdout).toMatch(/helpdesk\/deactivate-inactive\s+6\/6 100\.0%\s+0\/6 0\.0%\s+−100\.0 pts\s+0\.0022\s+0\.0130\s+regressed/);
    expect(worse.stdout).toMatch(/1 task with the same pass rate in both not shown/);
    expect(worse.stdout).toMatch(/mean pass rate per task 100\.0% → 16\.7%: −83\.3 pts \(95% CI −100\.0 pts to −50\.0 pts, bootstrap over 6 tasks\)/);
    expect(worse.stdout).toMatch(/5 regressed · 0 improved · 1 same/);
    const same = await runSilo(['compare', solver.evalId, solverAgain.evalId, '--out', out]);
    expect(same.code).toBe(0);
    expect(same.stdout).toMatch(/every task: 6 tasks with the same pass rate in both not shown/);
  });

  it('silo compare --json prints the comparison; --output writes one offline page, most significant first', async () => {
    const file = join(tmp.dir, 'compare.html');
    const r = await runSilo(['compare', solver.evalId, hallucinator.evalId, '--out', out, '--json', '--output', file]);
    expect(r.code).toBe(1);
    const json = JSON.parse(r.stdout) as Comparison;
    expect(json).toEqual(JSON.parse(JSON.stringify(compareEvals({ a: solver.evalId, b: hallucinator.evalId, outDir: out }))));
    expect(Object.keys(json)).toEqual(['version', 'a', 'b', 'tasks', 'onlyA', 'onlyB', 'overall']);
    expect(Object.keys(json.tasks[0]!)).toEqual(['taskId', 'a', 'b', 'delta', 'pValue', 'pHolm', 'verdict']);
    const html = readFileSync(file, 'utf8');
    expect(html).toContain('content="default-src &#39;none&#39;; style-src &#39;unsafe-inline&#39;; img-src data:; base-uri &#39;none&#39;; form-action &#39;none&#39;"');
    expect(html).not.toMatch(/<script/i);
    const rows = [...html.matchAll(/<tr class="verdict-(\w+)"><td><code>([^<]+)<\/code>/g)].map((m) => [m[1], m[2]]);
    expect(rows).toHaveLength(6);
    expect(rows.at(-1)).toEqual(['same', 'helpdesk/close-ticket']);
    expect(rows.slice(0, 5).every(([verdict]) => verdict === 'regressed')).toBe(true);
  });

  it('silo eval --baseline stores the comparison and prints it; --fail-on-regression exits 1', async () => {
    const r = await runSilo([
      'eval', 'fixtures/helpdesk', '--agent', 'fixtures/agents/hallucinator.ts', '--trials', '6', '--isolation', 'thread', '--out', out,
      '--baseline', solver.evalId, '--fail-on-regression', '--min-pass-rate', '0',
    ]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toMatch(new RegExp(`against baseline ${solver.evalId}: mean pass rate per task −83\\.3 pts`));
    expect(r.stdout).toMatch(/regressed \(5\): helpdesk\//);
    const evalId = /eval (\S+) · trials/.exec(r.stdout)![1]!;
    const summary = new EvalStore(out, evalId).readSummary();
    expect(summary.baseline).toMatchObject({ evalId: solver.evalId, improved: [] });
    expect(summary.baseline!.regressed).toHaveLength(5);
    // A regrade recomputes the comparison with the summary.
    const regraded = await regrade({ target: evalId, outDir: out });
    expect(regraded.evals[0]!.baseline).toEqual(summary.baseline);

    // Without --fail-on-regression, --min-pass-rate decides as before.
    const lenient = await runSilo(['eval', 'fixtures/helpdesk', '--agent', 'fixtures/agents/hallucinator.ts', '--isolation', 'thread', '--out', out, '--baseline', solver.evalId, '--min-pass-rate', '0']);
    expect(lenient.code).toBe(0);
  }, 60_000);

  it('refuses a baseline that is not there before running anything, and --fail-on-regression without one', async () => {
    const empty = join(tmp.dir, 'none');
    const missing = await runSilo(['eval', 'fixtures/helpdesk', '--agent', 'fixtures/agents/hallucinator.ts', '--out', empty, '--baseline', 'NOPE']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/no eval(s)? .*NOPE|no evals in/);
    expect(existsSync(join(empty, 'evals'))).toBe(false);
    const alone = await runSilo(['eval', 'fixtures/helpdesk', '--agent', 'fixtures/agents/hallucinator.ts', '--out', empty, '--fail-on-regression']);
    expect(alone.code).toBe(2);
    expect(alone.stderr).toMatch(/--fail-on-regression needs --baseline/);
  });

  it('silo compare names an eval that is not there', async () => {
    const r = await runSilo(['compare', solver.evalId, 'NOPE', '--out', out]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/no eval NOPE/);
  });

  it('silo compare given a run says it is a run, of which eval, not an eval: by id, by suffix, by folder', async () => {
    const runId = readdirSync(join(out, 'runs')).find((id) => JSON.parse(readFileSync(join(out, 'runs', id, 'run.json'), 'utf8')).evalId === hallucinator.evalId)!;
    const byId = await runSilo(['compare', solver.evalId, runId, '--out', out]);
    expect(byId.code).toBe(2);
    expect(byId.stderr).toBe(`silo: ${runId} is a run of eval ${hallucinator.evalId}, not an eval; give an evalId, a unique prefix or suffix of one (see \`silo ls\`), or an eval folder\n`);
    const bySuffix = await runSilo(['compare', runId.slice(-10), solver.evalId, '--out', out]);
    expect(bySuffix.stderr).toMatch(new RegExp(`^silo: ${runId.slice(-10)} is a run of eval ${hallucinator.evalId}, not an eval; `));
    expect(() => compareEvals({ a: join(out, 'runs', runId), b: solver.evalId, outDir: out })).toThrow(/is the folder of a run of eval \S+, not an eval/);
  });
});
