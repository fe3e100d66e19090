/**
 * runEval with real rollouts on small task sets: the summary's exact shape, every (task, trial)
 * pair run once and recorded, cancel, resume, retries of infrastructure failures, and what
 * reused workers do and do not share between rollouts.
 */
import { getEventListeners } from 'node:events';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { junitReport } from '../../src/eval/reporters.js';
import { localRunner, type RunnerFactory } from '../../src/eval/runner.js';
import { createRunner } from '../../src/pool/runners.js';
import { COMPILE_FOR_ROLLOUTS, prepareAgent } from '../../src/pool/compile.js';
import { runEval, SiloError } from '../../src/index.js';
import type { EvalProgress, EvalRunLine, EvalSummary, ResultRecord, RunRecord } from '../../src/index.js';
import { eventsOf, readRunFiles, tempDir } from '../helpers.js';

const tmp = tempDir('silo-eval-');
afterAll(() => tmp.remove());

let outs = 0;
/** A fresh artifact folder per eval, so run folders can be counted. */
function outDir(): string {
  return join(tmp.dir, `out-${outs++}`);
}

const HELPDESK = 'fixtures/helpdesk/tasks.ts';
const QUICK = 'fixtures/eval/quick.tasks.mjs';
const QUICK_IDS = ['quick/a', 'quick/b', 'quick/c'];
const agent = (name: string): string => `fixtures/agents/${name}`;

interface Run {
  run: RunRecord;
  result: ResultRecord | undefined;
}

/** Every run folder of `evalId` under `out`, parsed (result.json is absent while a run is running). */
function runsOf(out: string, evalId: string): Run[] {
  const dir = join(out, 'runs');
  if (!existsSync(dir)) return [];
  const runs: Run[] = [];
  for (const runId of readdirSync(dir)) {
    const runFile = join(dir, runId, 'run.json');
    if (!existsSync(runFile)) continue;
    const run = JSON.parse(readFileSync(runFile, 'utf8')) as RunRecord;
    if (run.evalId !== evalId) continue;
    const resultFile = join(dir, runId, 'result.json');
    const result = existsSync(resultFile) ? (JSON.parse(readFileSync(resultFile, 'utf8')) as ResultRecord) : undefined;
    runs.push({ run, result });
  }
  return runs;
}

/** Run folders under `out` whatever their eval (the evalId is not known until the eval returns). */
function runFolders(out: string): RunRecord[] {
  const dir = join(out, 'runs');
  if (!existsSync(dir)) return [];
  return readdirSync(dir).flatMap((runId) => {
    try {
      return [JSON.parse(readFileSync(join(dir, runId, 'run.json'), 'utf8')) as RunRecord];
    } catch {
      return [];
    }
  });
}

function summaryFile(out: string, evalId: string): EvalSummary {
  return JSON.parse(readFileSync(join(out, 'evals', evalId, 'summary.json'), 'utf8')) as EvalSummary;
}

function runLines(out: string, evalId: string): EvalRunLine[] {
  return readFileSync(join(out, 'evals', evalId, 'runs.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as EvalRunLine);
}

const pair = (r: { taskId: string; trial?: number | undefined }): string => `${r.taskId}#${r.trial}`;

async function waitFor(condition: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('runEval over the helpdesk tasks (trials 2, concurrency 4)', () => {
  const out = outDir();
  const progress: EvalProgress[] = [];
  let summary: EvalSummary;

  it('completes with every run passed', async () => {
    summary = await runEval({
      paths: ['fixtures/helpdesk'],
      agent: agent('helpdesk-solver.ts'),
      trials: 2,
      concurrency: 4,
      outDir: out,
      onProgress: (p) => progress.push(p),
    });
    expect(summary.status).toBe('completed');
    expect(summary.totals).toMatchObject({ runs: 12, passed: 12, failed: 0, errors: 0, retries: 0, passRate: 1 });
  });

  it('writes summary.json with exactly the SPEC keys, plus options, totals.retries and the suspicious counts', () => {
    const onDisk = summaryFile(out, summary.evalId);
    expect(onDisk).toEqual(summary);
    expect(Object.keys(onDisk).sort()).toEqual(
      ['version', 'evalId', 'status', 'startedAt', 'finishedAt', 'durationMs', 'agent', 'trials', 'options', 'tasks', 'totals'].sort(),
    );
    expect(Object.keys(onDisk.totals).sort()).toEqual(['runs', 'passed', 'failed', 'errors', 'retries', 'suspicious', 'passRate', 'passRateCi95'].sort());
    expect(onDisk.tasks).toHaveLength(6);
    for (const t of onDisk.tasks) {
      expect(Object.keys(t).sort()).toEqual(
        ['taskId', 'trials', 'passed', 'failed', 'errors', 'passRate', 'passAtK', 'passHatK', 'meanScore', 'p50Ms', 'p95Ms', 'flaky', 'suspicious'].sort(),
      );
      expect(t).toMatchObject({ trials: 2, passed: 2, failed: 0, errors: 0, passRate: 1, meanScore: 1, flaky: false, suspicious: 0 });
      expect(t.passAtK).toEqual({ '1': 1, '2': 1 });
      expect(t.passHatK).toEqual({ '1': 1, '2': 1 });
      expect(t.p50Ms).toBeGreaterThan(0);
      expect(t.p95Ms).toBeGreaterThanOrEqual(t.p50Ms!);
    }
  });

  it('records the eval: version 1, a ULID, times, the absolute agent, the trials asked for, a 95% interval', () => {
    expect(summary.version).toBe(1);
    expect(summary.evalId).toMatch(/^[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(Date.parse(summary.finishedAt!)).toBeGreaterThanOrEqual(Date.parse(summary.startedAt));
    expect(summary.durationMs).toBeGreaterThan(0);
    expect(summary.agent).toBe(join(process.cwd(), agent('helpdesk-solver.ts')));
    expect(summary.trials).toBe(2);
    expect(summary.totals.passRateCi95![1]).toBe(1);
    // Wilson with c = n: the lower bound is n / (n + z²).
    expect(summary.totals.passRateCi95![0]).toBeCloseTo(12 / (12 + 1.96 ** 2), 3);
    expect(summary.options).toEqual({
      taskFiles: [join(process.cwd(), HELPDESK)],
      agent: summary.agent,
      trials: 2,
      task: [],
      tag: [],
      limits: {},
      retries: 2,
      reuseWorkers: false,
      concurrency: 4,
    });
  });

  it('gives every run.json the evalId and a 0-based trial, each (task, trial) pair exactly once', () => {
    const runs = runsOf(out, summary.evalId);
    expect(runs).toHaveLength(12);
    expect(runFolders(out)).toHaveLength(12);
    expect(runs.map((r) => pair(r.run)).sort()).toEqual(summary.tasks.flatMap((t) => [`${t.taskId}#0`, `${t.taskId}#1`]).sort());
    for (const { run, result } of runs) {
      expect(run).toMatchObject({ evalId: summary.evalId, status: 'passed', termination: 'returned' });
      expect(result).toMatchObject({ status: 'passed', score: 1 });
    }
  });

  it('appends one runs.jsonl line per run, matching its run folder', () => {
    const lines = runLines(out, summary.evalId);
    expect(lines).toHaveLength(12);
    const byId = new Map(runsOf(out, summary.evalId).map((r) => [r.run.runId, r.run]));
    for (const l of lines) {
      const run = byId.get(l.runId)!;
      expect(l).toMatchObject({ taskId: run.taskId, trial: run.trial, status: run.status, termination: run.termination, durationMs: run.durationMs });
      expect(l.retried).toBeUndefined();
    }
  });

  it('reports progress up to done = total with nothing running', () => {
    expect(progress.length).toBeGreaterThanOrEqual(12);
    expect(progress.every((p) => p.evalId === summary.evalId && p.total === 12)).toBe(true);
    expect(progress.every((p) => p.running <= 4)).toBe(true);
    expect(progress.at(-1)).toMatchObject({ done: 12, passed: 12, failed: 0, errors: 0, running: 0 });
    const done = progress.map((p) => p.done);
    expect(done).toEqual([...done].sort((a, b) => a - b));
  });
});

describe('runEval options', () => {
  it('ORs ids/globs within --task, ORs tags within --tag, and ANDs the two', async () => {
    const out = outDir();
    const summary = await runEval({ paths: [QUICK], agent: agent('plain.js'), task: ['quick/*'], tag: ['alpha'], outDir: out });
    expect(summary.tasks.map((t) => t.taskId)).toEqual(['quick/a', 'quick/c']);
    expect(summary.options).toMatchObject({ task: ['quick/*'], tag: ['alpha'], trials: 1 });
    const both = await runEval({ paths: [QUICK], agent: agent('plain.js'), task: ['quick/a', 'quick/b'], tag: ['beta', 'alpha'], outDir: out });
    expect(both.tasks.map((t) => t.taskId)).toEqual(['quick/a', 'quick/b']);
    expect(runsOf(out, both.evalId)).toHaveLength(2);
  });

  it.each([
    [{ paths: [QUICK], agent: agent('plain.js'), trials: 0 }, /trials must be an integer >= 1/],
    [{ paths: [QUICK], agent: agent('plain.js'), concurrency: 0 }, /concurrency must be an integer >= 1/],
    [{ paths: [QUICK], agent: agent('plain.js'), retries: -1 }, /retries must be an integer >= 0/],
    [{ paths: [QUICK], agent: agent('no-such-agent.mjs') }, /agent file not found/],
    [{ paths: [QUICK] }, /needs an agent/],
    [{ paths: [], agent: agent('plain.js') }, /^an eval needs task files or folders, as paths: runEval\(\{ paths: \['evals\/tasks\.ts'\], agent: 'evals\/agents\/solver\.ts' \}\)$/],
    // (the name people guess: the error names the option)
    [{ tasks: [QUICK], agent: agent('plain.js') }, /^runEval takes the task files or folders as paths, not tasks: runEval\(\{ paths: /],
    [{ paths: ['fixtures/no-such-folder'], agent: agent('plain.js') }, /no such file or folder/],
    [{ paths: [QUICK], agent: agent('plain.js'), task: ['nope/*'] }, /no task matches --task nope\/\*/],
    [{ paths: [QUICK], agent: agent('plain.js'), limits: { timeoutMs: -5 } }, /timeoutMs/],
    [{ resume: '01NOSUCHEVAL0000000000000' }, /no eval 01NOSUCHEVAL0000000000000 in/],
  ])('rejects bad set-up with a SiloError before running anything: %j', async (options, message) => {
    const out = outDir();
    const error = await runEval({ ...options, outDir: out }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(SiloError);
    expect((error as Error).message).toMatch(message);
    expect(existsSync(join(out, 'runs'))).toBe(false);
  });
});

describe('a set-up error during the eval', () => {
  it('stops scheduling, lets the runs under way finish, writes the summary as error with them counted, and rejects', async () => {
    const out = outDir();
    // In a folder of its own: an agent whose folder holds the artifacts is refused.
    mkdirSync(join(tmp.dir, 'agent'), { recursive: true });
    const agentFile = join(tmp.dir, 'agent', 'removed-agent.mjs');
    copyFileSync(agent('slow-answer.mjs'), agentFile);
    let removed = false;
    const error = await runEval({
      paths: [QUICK],
      agent: agentFile,
      trials: 3,
      concurrency: 2,
      outDir: out,
      onProgress: (p) => {
        // The agent file disappears after the first run: the next rollout cannot start.
        if (p.done >= 1 && !removed) {
          removed = true;
          unlinkSync(agentFile);
        }
      },
    }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(SiloError);
    expect((error as Error).message).toMatch(/agent file not found/);

    const [evalId] = readdirSync(join(out, 'evals'));
    const summary = summaryFile(out, evalId!);
    const runs = runsOf(out, evalId!);
    expect(summary.status).toBe('error');
    expect(summary.finishedAt).toEqual(expect.any(String));
    expect(runs.length).toBeGreaterThanOrEqual(1);
    expect(runs.length).toBeLessThan(9);
    // Nothing was left running, and the summary counts every run that finished. A run already
    // under way may have reached its import after the file went: it ends agent_load_error.
    expect(runs.every((r) => r.run.status === 'passed' || r.result?.error?.code === 'agent_load_error')).toBe(true);
    const passed = runs.filter((r) => r.run.status === 'passed').length;
    expect(passed).toBeGreaterThanOrEqual(1);
    expect(summary.totals).toMatchObject({ runs: runs.length, passed, errors: runs.length - passed });
    expect(runLines(out, evalId!)).toHaveLength(runs.length);
  });
});

describe('cancel and resume', () => {
  it('on abort ends the running rollouts as cancelled (status error, not counted) and the summary as cancelled', async () => {
    const out = outDir();
    const controller = new AbortController();
    const evaluation = runEval({
      paths: [QUICK],
      agent: agent('hangs.mjs'),
      trials: 2,
      concurrency: 4,
      limits: { timeoutMs: 60_000, graceMs: 100 },
      outDir: out,
      signal: controller.signal,
    });
    await waitFor(() => runFolders(out).length === 4, 'four running rollouts');
    // The running rollouts hear of it through one listener on the eval's signal, not one each
    // (a signal's listeners are a list each add and remove walks: quadratic in the rollouts).
    expect(getEventListeners(controller.signal, 'abort').length).toBeLessThanOrEqual(2);
    controller.abort();
    const summary = await evaluation;

    expect(summary.status).toBe('cancelled');
    expect(summary.finishedAt).toEqual(expect.any(String));
    expect(summary.totals).toMatchObject({ runs: 0, passed: 0, failed: 0, errors: 0, retries: 0, passRate: null, passRateCi95: null });
    expect(summary.tasks.every((t) => t.trials === 0)).toBe(true);
    expect(summaryFile(out, summary.evalId)).toEqual(summary);

    // The four that ran are recorded as cancelled; the two never started have no folder.
    const runs = runsOf(out, summary.evalId);
    expect(runs).toHaveLength(4);
    for (const { run, result } of runs) {
      expect(run).toMatchObject({ status: 'error', termination: 'cancelled' });
      expect(result).toMatchObject({ status: 'error', termination: 'cancelled', score: null, error: { code: 'cancelled' } });
    }
    const lines = runLines(out, summary.evalId);
    expect(lines).toHaveLength(4);
    expect(lines.every((l) => l.termination === 'cancelled' && l.status === 'error')).toBe(true);
  });

  it('an aborted signal before the start runs nothing and says cancelled', async () => {
    const out = outDir();
    const summary = await runEval({ paths: [QUICK], agent: agent('plain.js'), outDir: out, signal: AbortSignal.abort() });
    expect(summary.status).toBe('cancelled');
    expect(summary.totals.runs).toBe(0);
    expect(runFolders(out)).toHaveLength(0);
  });

  it('resume keeps the evalId and options and runs only the pairs with no finished run', async () => {
    const out = outDir();
    const controller = new AbortController();
    let aborting = false;
    const first = await runEval({
      paths: [QUICK],
      agent: agent('slow-answer.mjs'),
      trials: 2,
      concurrency: 1,
      limits: { graceMs: 100 },
      outDir: out,
      signal: controller.signal,
      onProgress: (p) => {
        // Abort while the third run is under way, so one run ends as cancelled.
        if (p.done >= 2 && !aborting) {
          aborting = true;
          setTimeout(() => controller.abort(), 50);
        }
      },
    });
    expect(first.status).toBe('cancelled');
    const before = runsOf(out, first.evalId);
    const finishedBefore = before.filter((r) => r.run.termination !== 'cancelled');
    const cancelledBefore = before.filter((r) => r.run.termination === 'cancelled');
    expect(finishedBefore.length).toBeGreaterThanOrEqual(2);
    expect(finishedBefore.length).toBeLessThan(6);
    expect(cancelledBefore).toHaveLength(1);
    expect(first.totals.runs).toBe(finishedBefore.length);

    const resumed = await runEval({ resume: first.evalId, outDir: out, concurrency: 2 });
    expect(resumed.evalId).toBe(first.evalId);
    expect(resumed.status).toBe('completed');
    expect(resumed.startedAt).toBe(first.startedAt);
    // The concurrency given to the resume is the one it stores (another resume keeps it).
    expect(resumed.options).toEqual({ ...first.options, concurrency: 2 });
    expect(resumed.agent).toBe(first.agent);

    const after = runsOf(out, first.evalId);
    // Only the missing pairs ran: nothing finished was run again.
    expect(after).toHaveLength(before.length + (6 - finishedBefore.length));
    const finished = after.filter((r) => r.run.termination !== 'cancelled');
    expect(finished.map((r) => pair(r.run)).sort()).toEqual(QUICK_IDS.flatMap((id) => [`${id}#0`, `${id}#1`]).sort());
    for (const r of finishedBefore) expect(finished.map((f) => f.run.runId)).toContain(r.run.runId);
    // The totals are those of a full eval.
    expect(resumed.totals).toMatchObject({ runs: 6, passed: 6, failed: 0, errors: 0, retries: 0, passRate: 1 });
    expect(resumed.tasks.map((t) => [t.taskId, t.trials, t.passed])).toEqual(QUICK_IDS.map((id) => [id, 2, 2]));
    expect(summaryFile(out, first.evalId)).toEqual(resumed);

    // Resuming a completed eval runs nothing and changes no count.
    const again = await runEval({ resume: first.evalId, outDir: out });
    expect(again.totals).toEqual(resumed.totals);
    expect(runsOf(out, first.evalId)).toHaveLength(after.length);
  });

  it('resume keeps the stored concurrency unless given another, and finds the eval by a prefix or suffix of its id', async () => {
    const out = outDir();
    const first = await runEval({ paths: [QUICK], agent: agent('plain.js'), trials: 1, concurrency: 3, outDir: out, signal: AbortSignal.abort() });
    expect(first.options.concurrency).toBe(3);
    const asked: (number | undefined)[] = [];
    const runner: RunnerFactory = (context) => {
      asked.push(context.concurrency);
      return Promise.resolve(localRunner(context, createRunner('thread'), context.concurrency ?? 32));
    };
    const resumed = await runEval({ resume: first.evalId.slice(-8).toLowerCase(), outDir: out, runner });
    expect(resumed.evalId).toBe(first.evalId);
    expect(resumed.totals.runs).toBe(3);
    expect(resumed.options.concurrency).toBe(3);
    await runEval({ resume: first.evalId.slice(0, 20), outDir: out, runner, concurrency: 5 });
    expect(asked).toEqual([3, 5]);
  });
});

describe('localRunner', () => {
  it('takes agents prepared early (silo eval) only when the eval is of a size prepared alike', async () => {
    const fake = () => ({ get: vi.fn(() => Promise.resolve({ modulePath: '', readable: [], mapStack: (t: string) => t })) });
    const pool = { link: () => undefined, run: () => undefined, destroy: () => Promise.resolve(), warm: vi.fn() } as unknown as Parameters<typeof localRunner>[1];
    const context = (rollouts: number) => ({ evalId: 'x', record: { agent: agent('plain.js') } as never, outDir: outDir(), rollouts });
    for (const [early, eval_, taken] of [
      [1, 3, true],
      [COMPILE_FOR_ROLLOUTS, 256, true],
      [1, COMPILE_FOR_ROLLOUTS, false],
      [COMPILE_FOR_ROLLOUTS, 1, false],
    ] as const) {
      const prepared = fake();
      localRunner(context(eval_), pool, 2, { prepared: prepared as never, rollouts: early });
      expect([early, eval_, prepared.get.mock.calls.length > 0]).toEqual([early, eval_, taken]);
    }
  });
});

describe('retries', () => {
  it('retries a crashed worker `retries` times, counts retries apart, and counts the last attempt as the trial', async () => {
    const out = outDir();
    const summary = await runEval({ paths: [QUICK], agent: agent('dies-silently.mjs'), retries: 1, concurrency: 3, limits: { graceMs: 100 }, outDir: out });
    expect(summary.status).toBe('completed');
    // The last attempt counts: a crash is graded on the world as the agent left it (no answer: failed).
    expect(summary.totals).toMatchObject({ runs: 3, passed: 0, failed: 3, errors: 0, retries: 3, passRate: 0 });
    expect(summary.tasks.map((t) => [t.taskId, t.trials, t.failed])).toEqual(QUICK_IDS.map((id) => [id, 1, 1]));

    const lines = runLines(out, summary.evalId);
    expect(lines).toHaveLength(6);
    for (const id of QUICK_IDS) {
      const mine = lines.filter((l) => l.taskId === id);
      expect(mine.map((l) => l.retried === true)).toEqual([true, false]);
      expect(mine.every((l) => l.termination === 'crashed' && l.trial === 0)).toBe(true);
      expect(mine.at(-1)!.status).toBe('failed');
    }
    const runs = runsOf(out, summary.evalId);
    expect(runs).toHaveLength(6);
    expect(runs.every((r) => r.run.termination === 'crashed')).toBe(true);
  });

  it('does not retry an agent that ended its own worker (process.exit): that is its result', async () => {
    const out = outDir();
    const summary = await runEval({ paths: [QUICK], agent: agent('exits.mjs'), retries: 2, concurrency: 3, limits: { graceMs: 100 }, outDir: out });
    expect(summary.totals).toMatchObject({ runs: 3, failed: 3, retries: 0 });
    const lines = runLines(out, summary.evalId);
    expect(lines).toHaveLength(3);
    expect(lines.every((l) => l.termination === 'crashed' && l.error?.code === 'agent_exit' && !l.retried)).toBe(true);
    // A resume finds every pair finished and runs nothing.
    const resumed = await runEval({ resume: summary.evalId, outDir: out });
    expect(runLines(out, summary.evalId)).toHaveLength(3);
    expect(resumed.totals).toMatchObject({ runs: 3, retries: 0 });
  });

  it('on resume runs again the pairs whose last run was lost to infrastructure, counting the lost run as a retry', async () => {
    const out = outDir();
    const first = await runEval({ paths: [QUICK], agent: agent('dies-silently.mjs'), retries: 0, concurrency: 3, limits: { graceMs: 100 }, outDir: out });
    expect(first.totals).toMatchObject({ runs: 3, failed: 3, retries: 0 });
    const resumed = await runEval({ resume: first.evalId, outDir: out });
    // Each pair ran once more; the earlier crashes are retries now, not trials.
    expect(runsOf(out, first.evalId)).toHaveLength(6);
    expect(resumed.totals).toMatchObject({ runs: 3, failed: 3, retries: 3 });
    expect(resumed.tasks.map((t) => t.trials)).toEqual([1, 1, 1]);
    // JUnit agrees with the totals: one testcase per pair, the latest run.
    const xml = junitReport(resumed, runLines(out, first.evalId));
    expect(xml.match(/<testcase /g)).toHaveLength(3);
    const latest = new Set(runLines(out, first.evalId).slice(3).map((l) => l.runId));
    for (const m of xml.matchAll(/silo show (\w+)/g)) expect(latest.has(m[1]!)).toBe(true);
  });

  it('does not retry an agent that threw: that is the agent’s failure, not the infrastructure’s', async () => {
    const out = outDir();
    const summary = await runEval({ paths: [QUICK], agent: agent('throws.mjs'), retries: 2, outDir: out });
    expect(summary.totals.retries).toBe(0);
    expect(runsOf(out, summary.evalId)).toHaveLength(3);
    expect(runLines(out, summary.evalId).every((l) => l.termination === 'threw' && l.retried === undefined)).toBe(true);
  });
});

describe('an ES module agent in an eval of many rollouts', () => {
  it(`runs compiled to a script (from ${COMPILE_FOR_ROLLOUTS} rollouts on), as it runs as written`, async () => {
    const dir = join(tmp.dir, 'many-agent');
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'words.mjs'), 'export const word = "imported";\n');
    const source = [
      "import { word } from './words.mjs';",
      'const top = typeof this;',
      'let strict;',
      'try { undeclared = 1; strict = false; } catch { strict = true; }',
      'export default async function agent({ callTool }) {',
      "  await callTool('increment', {});",
      "  return JSON.stringify({ word, top, strict, url: import.meta.url.endsWith('/many-agent/agent.mjs')});",
      '}',
    ].join('\n');
    const file = join(dir, 'agent.mjs');
    writeFileSync(file, source);
    const asWritten = await runEval({ paths: [QUICK], task: ['quick/a'], agent: file, trials: 2, outDir: outDir() });
    expect(asWritten.totals).toMatchObject({ runs: 2, passed: 2 });
    // Two rollouts: it ran as written (nothing compiled).
    expect((await prepareAgent(file)).modulePath).toBe(file);

    const out = outDir();
    const summary = await runEval({ paths: [QUICK], task: ['quick/a'], agent: file, trials: COMPILE_FOR_ROLLOUTS, concurrency: 8, outDir: out });
    expect(summary.totals).toMatchObject({ runs: COMPILE_FOR_ROLLOUTS, passed: COMPILE_FOR_ROLLOUTS });
    const outputs = new Set(runsOf(out, summary.evalId).map((r) => r.result!.output));
    expect([...outputs]).toEqual([JSON.stringify({ word: 'imported', top: 'undefined', strict: true, url: true })]);
    // It ran compiled: the compile is stored, and a single rollout now takes it.
    expect((await prepareAgent(file)).script).toBe(true);
  });
});

describe('reuse workers', () => {
  /** The outputs of an eval's runs, in the order they started. */
  async function outputs(agentFile: string, reuseWorkers?: boolean): Promise<string[]> {
    const out = outDir();
    const summary = await runEval({
      paths: [QUICK],
      agent: agent(agentFile),
      trials: 2,
      concurrency: 1,
      outDir: out,
      ...(reuseWorkers === undefined ? {} : { reuseWorkers }),
    });
    expect(summary.totals).toMatchObject({ runs: 6, passed: 6 });
    expect(summary.options.reuseWorkers).toBe(reuseWorkers ?? false);
    return runsOf(out, summary.evalId)
      .sort((a, b) => a.run.startedAt.localeCompare(b.run.startedAt) || a.run.runId.localeCompare(b.run.runId))
      .map((r) => r.result!.output!);
  }

  it('by default never leaks: a global set by one rollout is gone in the next', async () => {
    expect(await outputs('global-counter.mjs')).toEqual(['1', '1', '1', '1', '1', '1']);
  });

  it('with reuseWorkers, globals do leak between rollouts of a warm worker (as documented)', async () => {
    const seen = (await outputs('global-counter.mjs', true)).map(Number);
    expect(Math.max(...seen)).toBeGreaterThan(1);
  });

  it('with reuseWorkers, each rollout still gets a fresh instance of the agent module', async () => {
    expect(await outputs('module-counter.mjs', true)).toEqual(['1', '1', '1', '1', '1', '1']);
  });

  it('with reuseWorkers, a CommonJS agent gets a fresh instance too (Node caches those by file, whatever the query)', async () => {
    expect(await outputs('module-counter.cjs', true)).toEqual(['1', '1', '1', '1', '1', '1']);
  });

  it('with reuseWorkers, runs several agents in one thread, and each one\'s console output reaches its own trace', async () => {
    const out = outDir();
    const summary = await runEval({ paths: [QUICK], agent: agent('chatty-waiter.mjs'), trials: 6, concurrency: 18, outDir: out, reuseWorkers: true });
    expect(summary.totals).toMatchObject({ runs: 18, passed: 18 });
    let most = 0;
    for (const { run, result } of runsOf(out, summary.evalId)) {
      const [token, seen] = result!.output!.split(' ');
      most = Math.max(most, Number(seen));
      const logs = eventsOf(readRunFiles(join(out, 'runs', run.runId)).trace, 'agent_log').map((e) => e.message);
      expect(logs).toEqual([`before ${token}`, `after ${token}`]);
    }
    expect(most).toBeGreaterThan(1);
  });
});

describe('runEval failures of its own', () => {
  it('stops, writes an error summary and rethrows when onProgress throws', async () => {
    const out = outDir();
    await expect(
      runEval({
        paths: [QUICK],
        agent: agent('slow-answer.mjs'),
        trials: 3,
        concurrency: 2,
        outDir: out,
        onProgress: () => {
          throw new Error('progress display broke');
        },
      }),
    ).rejects.toThrow('progress display broke');
    const evals = readdirSync(join(out, 'evals'));
    const summary = JSON.parse(readFileSync(join(out, 'evals', evals[0]!, 'summary.json'), 'utf8')) as EvalSummary;
    expect(summary.status).toBe('error');
    // Scheduling stopped: the slots finished what they had and took no more of the 9 pairs.
    expect(runLines(out, summary.evalId).length).toBeLessThan(9);
  });

  it('says completed, not cancelled, when the cancel came after the last pair finished', async () => {
    const out = outDir();
    const cancel = new AbortController();
    const summary = await runEval({
      paths: [QUICK],
      agent: agent('slow-answer.mjs'),
      outDir: out,
      signal: cancel.signal,
      onProgress: (p) => {
        if (p.done === p.total) cancel.abort();
      },
    });
    expect(summary.status).toBe('completed');
  });
});
