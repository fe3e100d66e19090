/**
 * A host that dies mid-run (kill -9 of `silo eval`, as an out-of-memory kill would) leaves run.json
 * and summary.json saying `running`. They record the process that owns them (src/owner.ts), so
 * the next `silo` command reports such runs as crashed instead of running for ever, and
 * `eval --resume` runs their pairs again.
 */
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ownerGone, thisProcess } from '../../src/owner.js';
import { reportedEvalStatus, reportedRun } from '../../src/inspect/runs.js';
import type { EvalRunLine, EvalSummary, RunRecord } from '../../src/types.js';
import { deadPid, tempDir } from '../helpers.js';
import { BIN, PLAIN_ENV, runSilo } from './silo.js';

const tmp = tempDir('silo-crashed-host-');
afterAll(() => tmp.remove());


describe('ownerGone', () => {
  it('knows this process is there, and a process that ended, a reused pid or a rebooted machine are gone', () => {
    const me = thisProcess();
    expect(me).toMatchObject({ pid: process.pid, host: hostname() });
    expect(ownerGone(me)).toBe(false);
    expect(ownerGone({ ...me, pid: deadPid() })).toBe(true);
    if (me.since) expect(ownerGone({ ...me, since: `${Number(me.since) + 1}` })).toBe(true);
    if (me.boot) expect(ownerGone({ ...me, boot: 'another-boot' })).toBe(true);
  });

  it('cannot tell for another machine or a record without an owner, and says it may still run', () => {
    expect(ownerGone({ pid: deadPid(), host: `not-${hostname()}` })).toBe(false);
    expect(ownerGone(undefined)).toBe(false);
  });

  it('makes readers report a run left running by a process that is gone as crashed, and leaves others be', () => {
    const run = { status: 'running', termination: null, owner: { pid: deadPid(), host: hostname() } } as unknown as RunRecord;
    expect(reportedRun(run)).toMatchObject({ status: 'error', termination: 'crashed' });
    const alive = { ...run, owner: thisProcess() };
    expect(reportedRun(alive)).toBe(alive);
    expect(reportedEvalStatus({ status: 'running', owner: { pid: deadPid(), host: hostname() } })).toBe('interrupted');
    expect(reportedEvalStatus({ status: 'running', owner: thisProcess() })).toBe('running');
  });
});

describe('silo eval killed with SIGKILL mid-run', () => {
  it('leaves runs that ls and show report as crashed, and that --resume runs again', async () => {
    const out = join(tmp.dir, 'out');
    const eval1 = spawn(process.execPath, [BIN, 'eval', 'fixtures/eval/quick.tasks.mjs', '--agent', 'fixtures/agents/hangs.mjs', '--timeout', '3000', '--out', out], {
      env: PLAIN_ENV,
      stdio: 'ignore',
    });
    const running = (): RunRecord[] => {
      const dir = join(out, 'runs');
      if (!existsSync(dir)) return [];
      return readdirSync(dir).flatMap((id) => {
        try {
          return [JSON.parse(readFileSync(join(dir, id, 'run.json'), 'utf8')) as RunRecord];
        } catch {
          return [];
        }
      });
    };
    // Its three rollouts have started (each agent waits for its 3 s limit): kill it now.
    for (let i = 0; i < 400 && running().length < 3; i++) await new Promise((resolve) => setTimeout(resolve, 25));
    const gone = new Promise((resolve) => eval1.once('exit', resolve));
    eval1.kill('SIGKILL');
    await gone;
    const left = running();
    expect(left.map((r) => r.status)).toEqual(['running', 'running', 'running']);
    expect(left[0]?.owner?.pid).toBe(eval1.pid);

    const ls = await runSilo(['ls', '--json', '--out', out]);
    expect(ls.code).toBe(0);
    const listed = JSON.parse(ls.stdout) as { runs: { status: string; termination: string | null }[]; evals: { evalId: string; status: string }[] };
    expect(listed.runs).toHaveLength(3);
    for (const run of listed.runs) expect(run).toMatchObject({ status: 'error', termination: 'crashed' });
    expect(listed.evals).toEqual([expect.objectContaining({ status: 'interrupted' })]);

    const show = await runSilo(['show', left[0]!.runId, '--out', out]);
    expect(show.stdout).toContain(`this run crashed: the process running it (pid ${eval1.pid} on ${hostname()}) ended before it finished`);
    const shown = JSON.parse((await runSilo(['show', left[0]!.runId, '--json', '--out', out])).stdout) as { run: RunRecord };
    expect(shown.run).toMatchObject({ status: 'error', termination: 'crashed' });

    const evalId = listed.evals[0]!.evalId;
    const resumed = await runSilo(['eval', '--resume', evalId, '--reporter', 'json', '--out', out]);
    const summary = JSON.parse(resumed.stdout) as EvalSummary;
    expect(summary).toMatchObject({ evalId, status: 'completed', totals: { runs: 3 } });
    const lines = readFileSync(join(out, 'evals', evalId, 'runs.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as EvalRunLine);
    expect(lines.map((l) => l.termination)).toEqual(['timeout', 'timeout', 'timeout']);
    // The runs the killed eval left stay where they are, still reported crashed.
    const after = JSON.parse((await runSilo(['ls', '--json', '--out', out])).stdout) as typeof listed;
    expect(after.runs.filter((r) => r.termination === 'crashed')).toHaveLength(3);
    expect(after.evals).toEqual([expect.objectContaining({ status: 'completed' })]);
  }, 90_000);
});
