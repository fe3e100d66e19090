/**
 * One stored run graded again, without its agent: the task as its file is now, the worlds rebuilt
 * from the seed and the stored diff (src/rollout/rebuild.ts), today's verifier and `mayChange`
 * through the rollout's own grading (grade.ts) on the stored output and trace, a new diagnosis. The
 * earlier result is kept as `result.<n>.json`; result.json and run.json are replaced atomically.
 */
import { conversationFromTrace, soloConversation } from '../user/dialogue.js';
import { copyFileSync, existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { diagnose } from '../inspect/diagnose.js';
import { readJson, readTrace } from '../inspect/runs.js';
import { writeJsonAtomic } from '../rollout/artifacts.js';
import type { Change } from '../rollout/diff.js';
import { grade, unrecordedOutput } from '../rollout/grade.js';
import { rebuildWorlds } from '../rollout/rebuild.js';
import type { ErrorInfo, ResultRecord, RunRecord, RunResult, RunStatus, Task } from '../types.js';

/** Why a run was not graded again although it had been graded before. */
export type RefusalReason = 'world_changed' | 'environment_error' | 'task_not_found' | 'artifacts_missing';

/** A run that could not be graded again: its result stays as it was. */
export interface RegradeRefusal {
  runId: string;
  taskId: string;
  trial?: number;
  reason: RefusalReason;
  message: string;
}

/** What became of one run. */
export type RunRegrade =
  | {
      kind: 'regraded';
      run: RunRecord;
      from: Exclude<RunStatus, 'running'>;
      /** The run as runRollout would have returned it with today's grade, for the eval's run line (output and check values left out). */
      result: RunResult;
    }
  /** Never graded (not started, agent did not load, cancelled, lost): left as it was. */
  | { kind: 'skipped'; runId: string; why: string }
  | ({ kind: 'refused' } & RegradeRefusal);

/** Finds a run's task today; a string says why there is none. */
export type TaskFinder = (run: RunRecord) => Promise<Task | string>;

/** Grades the run in `dir` again and writes its new result. */
export async function regradeRun(dir: string, findTask: TaskFinder, regradedAt: string): Promise<RunRegrade> {
  const run = readJson<RunRecord>(join(dir, 'run.json'));
  const id = run?.runId ?? dir;
  if (!run) return { kind: 'refused', runId: id, taskId: '?', reason: 'artifacts_missing', message: `${dir} has no readable run.json` };
  const refuse = (reason: RefusalReason, message: string): RunRegrade => ({
    kind: 'refused',
    runId: run.runId,
    taskId: run.taskId,
    ...(run.trial === undefined ? {} : { trial: run.trial }),
    reason,
    message,
  });
  if (run.status === 'running') return { kind: 'skipped', runId: run.runId, why: 'it has not finished' };
  const old = readJson<ResultRecord>(join(dir, 'result.json'));
  if (!old) return refuse('artifacts_missing', `${dir} has no readable result.json`);
  if (!wasGraded(old)) return { kind: 'skipped', runId: run.runId, why: `it was never graded (${old.error?.code ?? old.termination})` };
  const changes = readJson<Change[]>(join(dir, 'state-diff.json'));
  if (!Array.isArray(changes)) return refuse('artifacts_missing', `${dir} has no readable state-diff.json, so its final world cannot be rebuilt`);

  const task = await findTask(run);
  if (typeof task === 'string') return refuse('task_not_found', task);
  const worlds = await rebuildWorlds(task.environment, run, changes);
  if (!worlds.ok) return refuse(worlds.reason, worlds.message);

  const trace = readTrace(join(dir, 'trace.jsonl'));
  // The verifier saw the trace as it stood before the run's end was recorded.
  const seen = trace.filter((e) => e.type !== 'run_finished');
  // A run graded strictly (`--strict` at the time, or the task says so today) is again.
  const strict = run.strict === true || task.strict === true;
  // The conversation as the run had it; a run solo gets the instruction and its answer, as a rollout does.
  const conversation = run.user?.mode === 'solo' ? soloConversation(task.instruction, old.output) : conversationFromTrace(seen);
  const graded = await grade(task, { initial: worlds.initial, final: worlds.final, output: old.output, trace: seen, conversation }, changes, undefined, strict);
  // A grade replaces a verifier error; what else the run recorded (how its agent crashed) stays,
  // and an output that could not be recorded is said as a run says it.
  const unrecorded = graded.status === 'error' ? undefined : unrecordedOutput(seen);
  // A fail its agent's model provider made is that error again (model_error); a pass is a pass.
  const modelError = graded.status === 'failed' && old.error?.code === 'model_error' ? old.error : undefined;
  const error: ErrorInfo | undefined =
    graded.status === 'error'
      ? graded.error
      : (modelError ??
        (old.error?.code === 'verifier_error' || old.error?.code === 'model_error' ? undefined : old.error) ??
        (unrecorded === undefined ? undefined : { code: 'output_not_recorded', message: unrecorded }));
  const status = modelError ? 'error' : graded.status;
  const score = modelError ? null : graded.score;
  const diagnosis = diagnose({ trace, changes, checks: graded.checks, output: old.output, termination: old.termination, status, task });
  const { error: _old, ...kept } = old;
  const result: ResultRecord = {
    ...kept,
    status,
    score,
    checks: graded.checks,
    diagnosis,
    ...(error ? { error } : {}),
  };

  copyFileSync(join(dir, 'result.json'), join(dir, `result.${nextResultNumber(dir)}.json`));
  await writeJsonAtomic(join(dir, 'result.json'), result);
  const from = old.status as Exclude<RunStatus, 'running'>;
  const record: RunRecord = { ...run, status: result.status, regradedAt, ...(strict ? { strict: true as const } : {}) };
  await writeJsonAtomic(join(dir, 'run.json'), record);
  return {
    kind: 'regraded',
    run: record,
    from,
    // Kept until the eval's lines are rewritten, for every run: without the output and the checks'
    // values (on disk in result.json), so a regrade of 10,000 runs stays small in memory.
    result: {
      runId: run.runId,
      runDir: dir,
      taskId: run.taskId,
      status,
      score,
      termination: old.termination,
      checks: graded.checks.map((c) => (c.message === undefined ? { name: c.name, pass: c.pass } : { name: c.name, pass: c.pass, message: c.message })),
      output: null,
      diagnosis,
      ...(error ? { error } : {}),
      durationMs: run.durationMs ?? 0,
      toolCalls: run.toolCalls,
    },
  };
}

/**
 * Whether a run was graded (so it can be graded again): a pass, a fail, a verifier that failed,
 * or a fail that its agent's model provider made an error (model_error: it is one again if it
 * still fails). Runs that never reached a verifier (the world could not be built, the agent did not
 * load, cancelled, artifacts lost on the way back from a queue worker) stay as they were.
 */
export function wasGraded(result: Pick<ResultRecord, 'status' | 'error'>): boolean {
  return result.status === 'passed' || result.status === 'failed' || result.error?.code === 'verifier_error' || result.error?.code === 'model_error';
}

/** The next free n of `result.<n>.json` in a run folder (1 for the first regrade). */
export function nextResultNumber(dir: string): number {
  let n = 0;
  for (const name of existsSync(dir) ? readdirSync(dir) : []) {
    const m = /^result\.(\d+)\.json$/.exec(name);
    if (m) n = Math.max(n, Number(m[1]));
  }
  return n + 1;
}
