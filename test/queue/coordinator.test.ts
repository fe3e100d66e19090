/**
 * jobResults: what a finished job means for the eval. Each stall of the job is a lost run (a retry);
 * a job that failed is a lost run (an infrastructure failure the eval may retry) and its last
 * stall is not counted twice; a refusal or an unknown format stops the eval; a run's files are
 * written to the coordinator's run folder.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { isInfrastructureFailure } from '../../src/eval/counted.js';
import { jobResults, type FinishedJob } from '../../src/queue/coordinator.js';
import { JOB_VERSION, type RolloutJobResult } from '../../src/queue/job.js';
import { tempDir } from '../helpers.js';

const tmp = tempDir('silo-coordinator-');
afterAll(() => tmp.remove());

const RUN_ID = '01JABCDEFGHJKMNPQRSTVWXYZ0';

const ran: RolloutJobResult = {
  version: JOB_VERSION,
  kind: 'run',
  worker: 'box:1',
  result: { runId: RUN_ID, taskId: 't', status: 'passed', score: 1, termination: 'returned', checks: [], output: 'ok', diagnosis: [], durationMs: 3, toolCalls: 0 },
  files: { 'trace.jsonl': '{"seq":0}\n', 'state-diff.json': '[]\n', 'result.json': '{"status":"passed"}\n', 'run.json': '{"status":"passed"}\n' },
};

const job = (fields: Partial<FinishedJob>): FinishedJob => ({ id: 'j', returnvalue: ran, failedReason: undefined as unknown as string, finishedOn: 1, stalledCounter: 0, ...fields });

describe('jobResults', () => {
  it('writes the run a worker sent into the coordinator run folder', () => {
    const [result, ...rest] = jobResults(job({}), 't', tmp.dir);
    expect(rest).toEqual([]);
    expect(result).toMatchObject({ runId: RUN_ID, status: 'passed', runDir: join(tmp.dir, 'runs', RUN_ID) });
    expect(readFileSync(join(tmp.dir, 'runs', RUN_ID, 'trace.jsonl'), 'utf8')).toBe('{"seq":0}\n');
  });

  it('puts a lost run before the result for every time the job stalled', () => {
    const results = jobResults(job({ stalledCounter: 2 }), 't', tmp.dir);
    expect(results.map((r) => r.error?.code ?? r.status)).toEqual(['worker_lost', 'worker_lost', 'passed']);
    for (const lost of results.slice(0, 2)) {
      expect(isInfrastructureFailure(lost)).toBe(true);
      expect(existsSync(join(tmp.dir, 'runs', lost.runId))).toBe(false);
    }
  });

  it('makes a failed job a lost run, counting the stall that failed it once', () => {
    const stalledOut = jobResults(job({ returnvalue: null as unknown as RolloutJobResult, failedReason: 'job stalled more than allowable limit', stalledCounter: 3 }), 't', tmp.dir);
    expect(stalledOut).toHaveLength(3);
    expect(stalledOut.at(-1)?.error).toEqual({ code: 'worker_lost', message: 'the queue job failed: job stalled more than allowable limit' });
    const threw = jobResults(job({ returnvalue: null as unknown as RolloutJobResult, failedReason: 'boom', stalledCounter: 1 }), 't', tmp.dir);
    expect(threw.map((r) => r.error?.message)).toEqual([expect.stringMatching(/stopped answering/), 'the queue job failed: boom']);
  });

  it('stops the eval when a worker refused the job, or answered in another format', () => {
    const refused: RolloutJobResult = { version: JOB_VERSION, kind: 'refused', worker: 'box:2', message: 'a.ts differs' };
    expect(() => jobResults(job({ returnvalue: refused }), 'helpdesk/x', tmp.dir)).toThrow('worker box:2 refused helpdesk/x: a.ts differs');
    const future = { ...ran, version: 2 } as unknown as RolloutJobResult;
    expect(() => jobResults(job({ returnvalue: future }), 't', tmp.dir)).toThrow(/answered job j in a format this coordinator does not know; run the same Silo version on every machine/);
  });
});
