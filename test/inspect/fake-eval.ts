/**
 * Writes an eval folder by hand (summary.json, runs.jsonl, and each run's four artifacts), in the
 * shapes Silo writes them, so report tests can build a thousand runs or a run with a megabyte of output
 * in milliseconds. The summary's statistics come from the real Tally.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tally } from '../../src/eval/tally.js';
import { DEFAULT_LIMITS } from '../../src/options.js';
import type { Check, Diagnosis, EvalRunLine, EvalSummary, ResultRecord, RunRecord, Termination, TraceEvent } from '../../src/types.js';

/** One run to write; everything but the task and the status has a default. */
export interface FakeRun {
  taskId: string;
  status: 'passed' | 'failed' | 'error';
  trial?: number;
  output?: string | null;
  termination?: Termination;
  diagnosis?: Diagnosis[];
  /** The whole trace; by default: started, one `lookup` call and its result, returned, finished. */
  trace?: TraceEvent[];
  diff?: unknown[];
  checks?: Check[];
  durationMs?: number;
  retried?: boolean;
}

/** A runId that sorts like a ULID and says which run it is. */
export function fakeRunId(i: number): string {
  return `01FAKERUN${String(i).padStart(17, '0')}`;
}

/** Writes `<outDir>/evals/<evalId>/` and (unless `runFolders` is false) `<outDir>/runs/<runId>/` for each run. */
export function writeFakeEval(
  outDir: string,
  evalId: string,
  runs: readonly FakeRun[],
  options: { runFolders?: boolean } = {},
): { summary: EvalSummary; runIds: string[] } {
  const evalDir = join(outDir, 'evals', evalId);
  mkdirSync(evalDir, { recursive: true });
  const taskIds = [...new Set(runs.map((r) => r.taskId))];
  const tally = new Tally(taskIds);
  const lines: EvalRunLine[] = [];
  const runIds: string[] = [];
  runs.forEach((r, i) => {
    const runId = fakeRunId(i);
    runIds.push(runId);
    const termination = r.termination ?? 'returned';
    const durationMs = r.durationMs ?? 100 + i;
    const output = r.output === undefined ? 'the answer' : r.output;
    const score = r.status === 'error' ? null : r.status === 'passed' ? 1 : 0;
    const line: EvalRunLine = { runId, taskId: r.taskId, trial: r.trial ?? 0, status: r.status, score, termination, durationMs, ...(r.retried ? { retried: true } : {}) };
    lines.push(line);
    tally.add(line);
    // Without run folders, only the eval's own files are written (a row each, no detail): fast.
    if (options.runFolders === false) return;
    const dir = join(outDir, 'runs', runId);
    mkdirSync(dir, { recursive: true });
    const run: RunRecord = {
      version: 1,
      runId,
      evalId,
      trial: r.trial ?? 0,
      taskId: r.taskId,
      taskFile: null,
      agent: '/agents/fake.mjs',
      status: r.status,
      termination,
      startedAt: '2026-01-01T00:00:00.000Z',
      finishedAt: '2026-01-01T00:00:01.000Z',
      durationMs,
      toolTimeMs: 2,
      agentTimeMs: durationMs - 2,
      toolCalls: 1,
      refusedCalls: 0,
      limits: { ...DEFAULT_LIMITS },
      seed: 7,
      silo: '0.0.0',
      node: '20',
      worldHash: null,
    };
    const checks = r.checks ?? [{ name: 'the answer is right', pass: r.status === 'passed', expected: 'the answer', actual: output }];
    const result: ResultRecord = { version: 1, runId, taskId: r.taskId, status: r.status, score, checks, output, outputTruncated: false, termination, diagnosis: r.diagnosis ?? [] };
    const trace: TraceEvent[] = r.trace ?? [
      { seq: 0, t: 0, type: 'run_started', taskId: r.taskId, agent: '/agents/fake.mjs', seed: 7 },
      { seq: 1, t: 10, type: 'tool_call', callId: 1, name: 'lookup', input: { id: 'u1' } },
      { seq: 2, t: 12, type: 'tool_result', callId: 1, durationMs: 2, ok: true, value: { name: 'Ada' } },
      { seq: 3, t: 20, type: 'agent_returned', output },
      { seq: 4, t: 21, type: 'run_finished', status: r.status, termination, score },
    ];
    writeFileSync(join(dir, 'run.json'), JSON.stringify(run));
    writeFileSync(join(dir, 'result.json'), JSON.stringify(result));
    writeFileSync(join(dir, 'trace.jsonl'), trace.map((e) => `${JSON.stringify(e)}\n`).join(''));
    writeFileSync(join(dir, 'state-diff.json'), JSON.stringify(r.diff ?? []));
  });
  const summary: EvalSummary = {
    version: 1,
    evalId,
    status: 'completed',
    startedAt: '2026-01-01T00:00:00.000Z',
    finishedAt: '2026-01-01T00:01:00.000Z',
    durationMs: 60_000,
    agent: '/agents/fake.mjs',
    trials: Math.max(1, ...runs.map((r) => (r.trial ?? 0) + 1)),
    options: { taskFiles: [], agent: '/agents/fake.mjs', trials: 1, task: [], tag: [], limits: {}, retries: 2, reuseWorkers: false },
    ...tally.stats(Math.max(1, ...runs.map((r) => (r.trial ?? 0) + 1))),
  };
  writeFileSync(join(evalDir, 'summary.json'), JSON.stringify(summary));
  writeFileSync(join(evalDir, 'runs.jsonl'), lines.map((l) => `${JSON.stringify(l)}\n`).join(''));
  return { summary, runIds };
}
