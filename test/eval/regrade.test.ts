/**
 * regrade on helpdesk: an eval graded by wrong verifiers, regraded after the fix, equals a fresh
 * eval of the fixed tasks by the same deterministic agent; an unchanged verifier changes nothing;
 * the rebuilt final world is the one the verifier saw at run time, tracked or snapshotted; a
 * changed world is refused; never-graded runs stay; no agent code runs; merged shards and single
 * runs update their eval; `silo regrade` prints what changed and exits as `silo eval`.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mergeEvals, regrade, runEval, type RegradeReport } from '../../src/index.js';
import { EvalStore } from '../../src/eval/store.js';
import { nextResultNumber, wasGraded } from '../../src/eval/regrade-run.js';
import type { EvalRunLine, EvalSummary, ResultRecord, RunRecord } from '../../src/types.js';
import { runSilo } from '../cli/silo.js';
import { tempDir } from '../helpers.js';
import { grades, writeHelpdesk } from './regrade-tasks.js';
import { statistics } from './statistics.js';

const tmp = tempDir('silo-regrade-');
afterAll(() => tmp.remove());
// The task files written below are ES modules.
writeFileSync(join(tmp.dir, 'package.json'), '{ "type": "module" }\n');

const SOLVER = 'fixtures/agents/helpdesk-solver.ts';

const CHANGED_BY_THE_FIX = ['helpdesk/close-ticket', 'helpdesk/escalate-priority', 'helpdesk/deactivate-inactive'];

function linesOf(out: string, evalId: string): EvalRunLine[] {
  return [...new EvalStore(out, evalId).readLines()];
}

function resultOf(out: string, runId: string, name = 'result.json'): ResultRecord {
  return JSON.parse(readFileSync(join(out, 'runs', runId, name), 'utf8')) as ResultRecord;
}

function runOf(out: string, runId: string): RunRecord {
  return JSON.parse(readFileSync(join(out, 'runs', runId, 'run.json'), 'utf8')) as RunRecord;
}

function checkValue(result: ResultRecord, name: string): unknown {
  return result.checks.find((c) => c.name === name)?.actual;
}

describe.each([
  ['tracked', {}],
  ['snapshotted', { snapshot: true }],
] as const)('regrade of a %s world after a verifier fix', (mode, options) => {
  const dir = join(tmp.dir, mode);
  const out = join(dir, 'out');
  let wrong: EvalSummary;
  let wrongLines: EvalRunLine[];
  let report: RegradeReport;

  beforeAll(async () => {
    mkdirSync(dir, { recursive: true });
    const tasks = writeHelpdesk(dir, 'broken', options);
    wrong = await runEval({ paths: [tasks], agent: SOLVER, trials: 2, outDir: out, isolation: 'thread' });
    wrongLines = linesOf(out, wrong.evalId);
    writeHelpdesk(dir, 'fixed', options);
    report = await regrade({ target: wrong.evalId, outDir: out });
  }, 60_000);

  it('the wrong verifiers failed or errored the runs of three tasks', () => {
    const runs = wrongLines;
    expect(wrong.totals).toMatchObject({ passed: 6, failed: 4, errors: 2 });
    expect(runs.every((l) => CHANGED_BY_THE_FIX.includes(l.taskId) === (l.status !== 'passed'))).toBe(true);
    expect(runs.filter((l) => l.status === 'error').map((l) => l.error?.code)).toEqual(['verifier_error', 'verifier_error']);
    expect(runOf(out, runs[0]!.runId).tracking?.mode).toBe(mode === 'tracked' ? 'writes' : 'snapshot');
  });

  it('lists exactly the runs the fix changed, and refuses none', () => {
    expect(report.runs).toBe(12);
    expect(report.refused).toEqual([]);
    expect(report.changed.map((c) => `${c.taskId}#${c.trial} ${c.from}→${c.to}`).sort()).toEqual(
      [
        'helpdesk/close-ticket#0 failed→passed',
        'helpdesk/close-ticket#1 failed→passed',
        'helpdesk/deactivate-inactive#0 failed→passed',
        'helpdesk/deactivate-inactive#1 failed→passed',
        'helpdesk/escalate-priority#0 error→passed',
        'helpdesk/escalate-priority#1 error→passed',
      ].sort(),
    );
  });

  it('equals a fresh eval of the fixed tasks by the same agent: summary, run lines and every result', async () => {
    const fresh = await runEval({ paths: [join(dir, 'tasks.ts')], agent: SOLVER, trials: 2, outDir: join(dir, 'fresh'), isolation: 'thread' });
    const regraded = new EvalStore(out, wrong.evalId).readSummary();
    expect(report.evals).toEqual([regraded]);
    expect(statistics(regraded)).toEqual(statistics(fresh));
    expect(regraded.totals.passed).toBe(12);
    // Same grades, checks (the world hashes among them) and diagnoses, (task, trial) by (task, trial).
    expect(grades(out, wrong.evalId)).toEqual(grades(join(dir, 'fresh'), fresh.evalId));
  }, 60_000);

  it('rebuilt the final and initial worlds the verifier saw at run time, for every run', () => {
    for (const line of linesOf(out, wrong.evalId)) {
      const before = resultOf(out, line.runId, 'result.1.json');
      const now = resultOf(out, line.runId);
      if (before.status === 'error') continue; // the throwing verifier recorded nothing
      expect(checkValue(now, 'final world')).toBe(checkValue(before, 'final world'));
      expect(checkValue(now, 'initial world')).toBe(checkValue(before, 'initial world'));
    }
    // The worlds differ where the agent wrote: the check is not vacuous.
    const close = linesOf(out, wrong.evalId).find((l) => l.taskId === 'helpdesk/close-ticket')!;
    const r = resultOf(out, close.runId);
    expect(checkValue(r, 'final world')).not.toBe(checkValue(r, 'initial world'));
  });

  it('keeps the old result as result.1.json and stamps run.json', () => {
    for (const line of linesOf(out, wrong.evalId)) {
      const files = readdirSync(join(out, 'runs', line.runId));
      expect(files).toContain('result.1.json');
      expect(files.filter((f) => f.endsWith('.tmp'))).toEqual([]);
      const run = runOf(out, line.runId);
      expect(run.regradedAt).toBe(new EvalStore(out, wrong.evalId).readSummary().regradedAt);
      expect(run.status).toBe(resultOf(out, line.runId).status);
    }
  });

  it('a second regrade with the verifier unchanged changes nothing but adds result.2.json', async () => {
    const before = grades(out, wrong.evalId);
    const again = await regrade({ target: wrong.evalId, outDir: out });
    expect(again).toMatchObject({ runs: 12, changed: [], refused: [] });
    expect(grades(out, wrong.evalId)).toEqual(before);
    const runId = linesOf(out, wrong.evalId)[0]!.runId;
    expect(nextResultNumber(join(out, 'runs', runId))).toBe(3);
    expect(resultOf(out, runId, 'result.2.json')).toEqual(resultOf(out, runId));
  });
});

describe('the changes regrade lists', () => {
  it('come by task id, then trial, whatever order the runs finished in; silo regrade prints them so', async () => {
    const dir = join(tmp.dir, 'order');
    mkdirSync(dir, { recursive: true });
    const out = join(dir, 'out');
    const wrong = await runEval({ paths: [writeHelpdesk(dir, 'broken')], agent: SOLVER, trials: 2, outDir: out, isolation: 'thread' });
    // runs.jsonl holds the runs in the order they finished: here, the last first.
    const file = new EvalStore(out, wrong.evalId).runsFile;
    writeFileSync(file, `${readFileSync(file, 'utf8').trim().split('\n').reverse().join('\n')}\n`);
    writeHelpdesk(dir, 'fixed');
    const r = await runSilo(['regrade', wrong.evalId, '--out', out]);
    expect(r.code).toBe(0);
    const listed = r.stdout
      .split('\n')
      .filter((l) => /^ {2}\S+ → /.test(l))
      .map((l) => l.trim().split(/\s+/).slice(0, 6).join(' '));
    expect(listed).toEqual([
      'failed → passed helpdesk/close-ticket trial 0',
      'failed → passed helpdesk/close-ticket trial 1',
      'failed → passed helpdesk/deactivate-inactive trial 0',
      'failed → passed helpdesk/deactivate-inactive trial 1',
      'error → passed helpdesk/escalate-priority trial 0',
      'error → passed helpdesk/escalate-priority trial 1',
    ]);
  }, 60_000);
});

describe('regrade refuses and skips', () => {
  it('refuses every run whose world changed since, leaves their results and the eval alone, and exits 1', async () => {
    const dir = join(tmp.dir, 'changed-world');
    const out = join(dir, 'out');
    const writeWorld = (start: number) =>
      writeFileSync(
        join(dir, 'tasks.ts'),
        `export default {
  id: 'counter/up',
  environment: { name: 'counter', createState: () => ({ count: ${start} }), tools: [{ name: 'increment', description: 'adds one', inputSchema: { type: 'object', properties: {} }, run: (s) => ++s.count }] },
  instruction: 'Increment the counter once.',
  verify: ({ initial, final }) => [{ name: 'one more', pass: final.count === initial.count + 1 }],
};
`,
      );
    mkdirSync(dir, { recursive: true });
    writeWorld(0);
    const summary = await runEval({ paths: [join(dir, 'tasks.ts')], agent: 'fixtures/agents/call-once.mjs', trials: 2, outDir: out, isolation: 'thread' });
    const lines = linesOf(out, summary.evalId);
    const before = lines.map((l) => resultOf(out, l.runId));
    const summaryBefore = readFileSync(new EvalStore(out, summary.evalId).summaryFile, 'utf8');
    writeWorld(10);

    const r = await runSilo(['regrade', summary.evalId, '--out', out]);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stdout).toMatch(/regraded 0 runs in .*: no status changed · 2 refused/);
    expect(r.stdout).toMatch(/world_changed: counter\.createState\(\) with seed \d+ builds another world than this run saw/);
    expect(lines.map((l) => resultOf(out, l.runId))).toEqual(before);
    expect(lines.every((l) => !existsSync(join(out, 'runs', l.runId, 'result.1.json')))).toBe(true);
    expect(readFileSync(new EvalStore(out, summary.evalId).summaryFile, 'utf8')).toBe(summaryBefore);

    const json = await runSilo(['regrade', summary.evalId, '--out', out, '--json']);
    const parsed = JSON.parse(json.stdout) as RegradeReport;
    // By task, then trial (not in the order the runs finished, which varies).
    const byTrial = [...lines].sort((a, b) => a.trial - b.trial);
    expect(parsed.refused.map((x) => [x.runId, x.taskId, x.trial, x.reason])).toEqual(byTrial.map((l) => [l.runId, 'counter/up', l.trial, 'world_changed']));

    // Put back, it grades again.
    writeWorld(0);
    expect(await regrade({ target: summary.evalId, outDir: out })).toMatchObject({ runs: 2, refused: [], changed: [] });
  }, 60_000);

  it('leaves runs that were never graded as they were', async () => {
    const out = join(tmp.dir, 'never-graded');
    const summary = await runEval({ paths: ['fixtures/helpdesk'], agent: 'fixtures/agents/hostile/no-default-export.ts', outDir: out, isolation: 'thread', task: ['helpdesk/close-ticket'] });
    const [line] = linesOf(out, summary.evalId);
    expect(line!.error?.code).toBe('agent_load_error');
    const before = readFileSync(join(out, 'runs', line!.runId, 'result.json'), 'utf8');
    const report = await regrade({ target: summary.evalId, outDir: out });
    expect(report).toMatchObject({ runs: 0, skipped: 1, changed: [], refused: [], evals: [] });
    expect(readFileSync(join(out, 'runs', line!.runId, 'result.json'), 'utf8')).toBe(before);
    expect(existsSync(join(out, 'runs', line!.runId, 'result.1.json'))).toBe(false);
  });

  it('grades again a pass, a fail and a verifier error, and nothing that never reached a verifier', () => {
    const graded = (status: ResultRecord['status'], code?: string) => wasGraded({ status, ...(code ? { error: { code, message: '' } } : {}) });
    expect([graded('passed'), graded('failed'), graded('passed', 'agent_exit'), graded('error', 'verifier_error')]).toEqual([true, true, true, true]);
    for (const code of ['environment_error', 'agent_load_error', 'cancelled', 'internal_error', 'worker_lost', 'artifacts_too_large']) {
      expect(graded('error', code), code).toBe(false);
    }
  });

  /** An eval in `out` with nothing but its summary. */
  async function storeSummary(out: string, evalId: string, status: EvalSummary['status']): Promise<void> {
    const store = new EvalStore(out, evalId);
    await store.open();
    await store.writeSummary({ ...(JSON.parse('{}') as EvalSummary), evalId, status });
    await store.close();
  }

  it('refuses an eval that is still running, and names what it cannot find', async () => {
    const out = join(tmp.dir, 'running');
    await storeSummary(out, 'busy', 'running');
    await expect(regrade({ target: 'busy', outDir: out })).rejects.toThrow(/eval busy is still running/);
    await expect(regrade({ target: 'NOPE', outDir: out })).rejects.toThrow(/no eval or run NOPE/);
    const r = await runSilo(['regrade', 'NOPE', '--out', out]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/^silo: no eval or run NOPE in /);
  });

  it('says how many evals and runs a short id names (an eval and its runs share their first characters)', async () => {
    const out = join(tmp.dir, 'ambiguous');
    await storeSummary(out, '01ABCEVAL', 'completed');
    mkdirSync(join(out, 'runs', '01ABCRUN1'), { recursive: true });
    writeFileSync(join(out, 'runs', '01ABCRUN1', 'run.json'), '{}\n');
    await expect(regrade({ target: '01abc', outDir: out })).rejects.toThrow(/^01abc matches 1 eval and 1 run in .*ambiguous \(01ABCEVAL, 01ABCRUN1\); give more of the id$/);
    // An id given whole is that one, though it also ends another (`--eval-id 1`, a runId ending in 1).
    await storeSummary(out, '1', 'running');
    await expect(regrade({ target: '1', outDir: out })).rejects.toThrow(/eval 1 is still running/);
  });
});

describe('regrade imports only the task files of the eval', () => {
  it("never imports a task file that a run's record names but the eval did not run (a queue worker writes that record)", async () => {
    const dir = join(tmp.dir, 'planted');
    mkdirSync(dir, { recursive: true });
    const tasks = writeHelpdesk(dir, 'fixed');
    const out = join(dir, 'out');
    const summary = await runEval({ paths: [tasks], agent: SOLVER, outDir: out, isolation: 'thread', task: ['helpdesk/close-ticket'] });
    const [line] = linesOf(out, summary.evalId);
    // A file of the attacker's choosing, with a task of the same id that would pass anything.
    const planted = join(dir, 'planted.ts');
    writeFileSync(
      planted,
      `(globalThis as { __planted?: boolean }).__planted = true;
export default { id: 'helpdesk/close-ticket', environment: { name: 'x', createState: () => ({}), tools: [] }, instruction: '', verify: () => [{ name: 'ok', pass: true }] };
`,
    );
    const runFile = join(out, 'runs', line!.runId, 'run.json');
    writeFileSync(runFile, JSON.stringify({ ...runOf(out, line!.runId), taskFile: planted }));
    const report = await regrade({ target: summary.evalId, outDir: out });
    expect((globalThis as { __planted?: boolean }).__planted).toBeUndefined();
    expect(report).toMatchObject({ runs: 1, refused: [], changed: [] });
    expect(resultOf(out, line!.runId).checks.map((c) => c.name)).toContain('final world');
  });
});

describe('regrade runs no agent code', () => {
  it('grades the answer the agent gave once: no tool runs again, the answer is the stored one', async () => {
    const dir = join(tmp.dir, 'once');
    mkdirSync(dir, { recursive: true });
    const write = (wanted: string) =>
      writeFileSync(
        join(dir, 'tasks.ts'),
        `const g = globalThis;
export default {
  id: 'once/nonce',
  environment: { name: 'once', createState: () => ({ ticks: 0 }), tools: [{ name: 'tick', description: 'counts', inputSchema: { type: 'object', properties: {} }, run: (s) => { g.__regradeTicks = (g.__regradeTicks ?? 0) + 1; return ++s.ticks; } }] },
  instruction: 'Tick once, then answer.',
  verify: ({ final, output }) => { g.__regradeVerified = (g.__regradeVerified ?? 0) + 1; return [{ name: 'ticked once', pass: final.ticks === 1 }, { name: 'answer', pass: ${wanted}.test(output ?? '') }]; },
};
`,
      );
    const g = globalThis as { __regradeTicks?: number; __regradeVerified?: number };
    write('/^nonce-/');
    const out = join(dir, 'out');
    const summary = await runEval({ paths: [join(dir, 'tasks.ts')], agent: 'fixtures/agents/hostile/answers-once.mjs', trials: 3, outDir: out, isolation: 'thread' });
    expect(summary.totals.passed).toBe(3);
    expect(g.__regradeTicks).toBe(3);
    const outputs = linesOf(out, summary.evalId).map((l) => resultOf(out, l.runId).output);

    // Now the answer must be a nonce the agent would not give again.
    write('/^nonce-0/');
    const verified = g.__regradeVerified!;
    const report = await regrade({ target: summary.evalId, outDir: out });
    expect(g.__regradeTicks).toBe(3);
    expect(g.__regradeVerified).toBe(verified + 3);
    expect(linesOf(out, summary.evalId).map((l) => resultOf(out, l.runId).output)).toEqual(outputs);
    // Whatever the new rule says of those answers, it says it of the stored ones.
    expect(report.changed.map((c) => c.runId).sort()).toEqual(
      linesOf(out, summary.evalId).filter((_l, i) => !outputs[i]!.startsWith('nonce-0')).map((l) => l.runId).sort(),
    );
  }, 60_000);
});

describe('regrade of a run whose output could not be recorded', () => {
  it('fails it again, with the same check and error, however the verifier grades it now', async () => {
    const dir = join(tmp.dir, 'unrecorded');
    mkdirSync(dir, { recursive: true });
    writeFileSync(
      join(dir, 'tasks.ts'),
      `export default {
  id: 'unrecorded/circle',
  environment: { name: 'unrecorded', createState: () => ({}), tools: [] },
  instruction: 'Answer.',
  verify: () => [{ name: 'anything goes', pass: true }],
};
`,
    );
    const out = join(dir, 'out');
    const summary = await runEval({ paths: [join(dir, 'tasks.ts')], agent: 'fixtures/agents/hostile/returns-circular.ts', outDir: out, isolation: 'thread' });
    expect(summary.totals).toMatchObject({ runs: 1, failed: 1 });
    const [line] = linesOf(out, summary.evalId);
    const before = resultOf(out, line!.runId);
    const report = await regrade({ target: summary.evalId, outDir: out });
    expect(report.changed).toEqual([]);
    const after = resultOf(out, line!.runId);
    expect(after).toMatchObject({ status: 'failed', checks: before.checks, error: before.error });
    expect(after.error).toEqual({ code: 'output_not_recorded', message: "the agent's output could not be recorded: it is circular (at .self)" });
  }, 60_000);
});

describe('regrade of merged shards and of single runs', () => {
  const dir = join(tmp.dir, 'shards');

  it('a merged eval of shards graded wrongly, regraded, equals a fresh eval of the fixed tasks', async () => {
    mkdirSync(dir, { recursive: true });
    const tasks = writeHelpdesk(dir, 'broken');
    await Promise.all([1, 2].map((index) => runEval({ paths: [tasks], agent: SOLVER, trials: 2, outDir: join(dir, `shard-${index}`), shard: { index, count: 2 }, evalId: 'ci-1', isolation: 'thread' })));
    const merged = await mergeEvals({ dirs: [join(dir, 'shard-1'), join(dir, 'shard-2')], outDir: join(dir, 'merged') });
    expect(merged.totals.passed).toBe(6);
    writeHelpdesk(dir, 'fixed');
    const report = await regrade({ target: join(dir, 'merged'), outDir: join(dir, 'elsewhere') });
    expect(report.changed).toHaveLength(6);
    const fresh = await runEval({ paths: [tasks], agent: SOLVER, trials: 2, outDir: join(dir, 'fresh'), isolation: 'thread' });
    expect(statistics(report.evals[0]!)).toEqual(statistics(fresh));
    expect(grades(join(dir, 'merged'), 'ci-1')).toEqual(grades(join(dir, 'fresh'), fresh.evalId));
  }, 90_000);

  it('regrades a run the eval retried too, says so, and keeps it out of the counts', async () => {
    const out = join(dir, 'retried');
    mkdirSync(dir, { recursive: true });
    const tasks = writeHelpdesk(dir, 'broken');
    const summary = await runEval({ paths: [tasks], agent: SOLVER, trials: 2, outDir: out, isolation: 'thread', task: ['helpdesk/close-ticket'] });
    // As if trial 0's run had been lost to a crashed worker (and its retry lost too).
    const store = new EvalStore(out, summary.evalId);
    const [first, second] = linesOf(out, summary.evalId).sort((a, b) => a.trial - b.trial);
    await store.rewriteLines([{ ...first!, retried: true }, second!]);
    writeHelpdesk(dir, 'fixed');
    const report = await regrade({ target: summary.evalId, outDir: out });
    expect(report.changed.map((c) => [c.runId, c.trial, c.retried ?? false])).toEqual([
      [first!.runId, 0, true],
      [second!.runId, 1, false],
    ]);
    expect(report.evals[0]!.totals).toMatchObject({ runs: 1, passed: 1, retries: 1 });
  }, 60_000);

  it('a single run regraded by its folder updates its line and its eval', async () => {
    const out = join(dir, 'single');
    mkdirSync(dir, { recursive: true });
    const tasks = writeHelpdesk(dir, 'broken');
    const summary = await runEval({ paths: [tasks], agent: SOLVER, outDir: out, isolation: 'thread', task: ['helpdesk/close-ticket', 'helpdesk/count-open-for-user'] });
    expect(summary.totals).toMatchObject({ passed: 1, failed: 1 });
    writeHelpdesk(dir, 'fixed');
    const line = linesOf(out, summary.evalId).find((l) => l.taskId === 'helpdesk/close-ticket')!;
    const r = await runSilo(['regrade', join(out, 'runs', line.runId)]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`failed → passed  helpdesk/close-ticket trial 0  ${line.runId}`));
    expect(r.stdout).toMatch(/2 runs · 2 passed · 0 failed/);
    const updated = linesOf(out, summary.evalId).find((l) => l.runId === line.runId)!;
    expect(updated).toMatchObject({ status: 'passed', score: 1 });
    expect(updated.failed).toBeUndefined();
    expect(new EvalStore(out, summary.evalId).readSummary().totals).toMatchObject({ passed: 2, failed: 0 });
    const shown = await runSilo(['show', join(out, 'runs', line.runId)]);
    expect(shown.stdout).toMatch(/^helpdesk\/close-ticket {2}PASSED/);
    expect(shown.stdout).toMatch(/regraded {4}\d{4}-\d\d-\d\dT.* \(the earlier results are kept as result\.<n>\.json\)/);
  }, 60_000);
});
