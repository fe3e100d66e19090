/**
 * Retail with its customers: the oracle converses with a scripted customer (it asks to go ahead,
 * replays the gold actions, tells the customer the expected outputs and answers only "Done."), so
 * every pass goes through the user channel and the output checks read the conversation. A sample
 * by default (the 20 dev tasks, none with an expected output, and the 26 test/1* tasks, five with one);
 * SILO_RETAIL_ALL=1 runs all 635. Today's command (no --user) runs
 * the same tasks solo and still passes. Workers run the built code: `npm run build` first.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadTasks, regrade, runEval, runRollout } from '../../src/index.js';
import { EvalStore } from '../../src/eval/store.js';
import type { RunRecord } from '../../src/types.js';
import { tempDir } from '../helpers.js';

const ALL = process.env.SILO_RETAIL_ALL === '1';
const ORACLE = 'fixtures/retail/gold/oracle.ts';
const SAMPLE = ['retail/dev/*', 'retail/test/1*'];
const COUNT = ALL ? 635 : 46;

const tmp = tempDir('silo-retail-conversation-');
afterAll(() => tmp.remove());

describe('retail with scripted customers', () => {
  it(`the conversing oracle passes ${ALL ? 'all 635 tasks' : 'a sample of 46 tasks'}, every output through the conversation; regrade hands it to the verifier again`, { timeout: ALL ? 1_800_000 : 120_000 }, async () => {
    const summary = await runEval({
      paths: ['fixtures/retail/scripted-users.ts'],
      agent: ORACLE,
      ...(ALL ? {} : { task: SAMPLE }),
      isolation: 'thread',
      reuseWorkers: true,
      outDir: tmp.dir,
    });
    expect(summary.totals).toMatchObject({ runs: COUNT, passed: COUNT, failed: 0, errors: 0 });
    for (const line of new EvalStore(tmp.dir, summary.evalId).readLines()) {
      // A run lost to infrastructure on a loaded machine (and run again) is not a trial.
      if (line.retried) continue;
      const run = JSON.parse(readFileSync(join(tmp.dir, 'runs', line.runId, 'run.json'), 'utf8')) as RunRecord;
      expect(run.user).toMatchObject({ mode: 'scripted', endedBy: 'user' });
      const result = JSON.parse(readFileSync(join(tmp.dir, 'runs', line.runId, 'result.json'), 'utf8')) as { output: string };
      expect(result.output).toBe('Done.');
    }
    // Regrade hands the verifier the stored conversation again: without it every task with an
    // expected output would now fail.
    const report = await regrade({ target: summary.evalId, outDir: tmp.dir });
    expect(report.refused).toEqual([]);
    expect(report.changed).toEqual([]);
    // Regrade also grades the runs an eval retried (it does not count them).
    expect(report.runs - summary.totals.retries).toBe(COUNT);
  });

  it('the outputs reach the grader only through the conversation: the same verifier given no conversation fails the run', async () => {
    // retail/test/16 expects "8276.23" in the answer.
    const [loaded] = (await loadTasks(['fixtures/retail/scripted-users.ts'])).filter((t) => t.task.id === 'retail/test/16');
    const task = loaded!.task;
    const talking = await runRollout({ task, agent: ORACLE, outDir: tmp.dir, isolation: 'thread' });
    expect(talking.status).toBe('passed');
    expect(talking.output).toBe('Done.');
    // A verifier that reads only the answer would fail it: the outputs were in the conversation.
    const onlyAnswer = await runRollout({ task: { ...task, verify: async (args) => task.verify({ ...args, conversation: [] }) }, agent: ORACLE, outDir: tmp.dir, isolation: 'thread' });
    expect(onlyAnswer.status).toBe('failed');
    expect(onlyAnswer.checks.find((c) => c.name === 'answer contains "8276.23"')?.pass).toBe(false);
  });

  it('without --user the retail tasks run solo, as before: same instruction, same pass', async () => {
    const [loaded] = (await loadTasks(['fixtures/retail/tasks.ts'])).filter((t) => t.task.id === 'retail/test/16');
    const solo = await runRollout({ task: loaded!.task, agent: ORACLE, outDir: tmp.dir, isolation: 'thread' });
    expect(solo.status).toBe('passed');
    expect(solo.output).toBe('8276.23');
    // (run solo, the conversation holds the answer alone: the check names no talk with the customer)
    expect(solo.checks.find((c) => c.name === 'answer contains "8276.23"')).toMatchObject({ pass: true, expected: 'contains "8276.23" (case-insensitive, commas removed from the answer)' });
    const run = JSON.parse(readFileSync(join(solo.runDir, 'run.json'), 'utf8')) as RunRecord;
    expect(run.user).toEqual({ mode: 'solo' });
  });
});
