/**
 * `regrade`: stored runs graded again by today's verifiers, without running any agent (see
 * regrade-run.ts for one run). Given an eval, every run it recorded; given a run, that run. An
 * eval whose runs were regraded gets its runs.jsonl and summary.json recomputed with the code a
 * local eval uses (toLine, Tally, and merge's rule for runs lost to infrastructure), so it reads
 * exactly as an eval graded this way from the start would. Evals collected from a queue and
 * merged shards are evals like any other: their run folders are in `<outDir>/runs/`.
 */
import { existsSync, statSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { SiloError } from '../errors.js';
import { loadTasks } from '../load.js';
import { DEFAULT_OUT_DIR } from '../options.js';
import { listEvalIds, listRunIds, matchIds, readJson } from '../inspect/runs.js';
import type { EvalRunLine, EvalSummary, RunRecord, RunStatus, Task } from '../types.js';
import { withBaseline } from './compare.js';
import { discoverTaskFiles } from './discover.js';
import { asCounted } from './counted.js';
import { regradeRun, type RegradeRefusal, type RunRegrade, type TaskFinder } from './regrade-run.js';
import { plural } from './reporters.js';
import { toLine } from './run-eval.js';
import { EvalStore } from './store.js';
import { Tally } from './tally.js';
import { DEFAULT_REGRADE_CONCURRENCY } from '../options.js';

export type { RegradeRefusal, RefusalReason } from './regrade-run.js';

export { DEFAULT_REGRADE_CONCURRENCY };

/** Options of regrade. */
export interface RegradeOptions {
  /**
   * What to grade again: an evalId or runId (or a unique prefix or suffix of one) in `outDir`, an eval
   * folder (`<out>/evals/<evalId>`), a run folder (`<out>/runs/<runId>`), or an `--out` folder that
   * holds one eval.
   */
  target: string;
  /** Artifact folder holding `evals/` and `runs/`. Default `.silo`. */
  outDir?: string;
  /**
   * Task files or folders to take every run's task from (by id), instead of the task file each
   * run.json records: for runs recorded on another machine, or tasks that moved.
   */
  tasks?: string[];
  /** Runs graded at once. Default 1 (more for verifiers that wait, such as a model as judge). */
  concurrency?: number;
  /** Called after each run. */
  onProgress?: (progress: { done: number; total: number }) => void;
}

/** A run whose status the new grade changed. */
export interface RegradeChange {
  runId: string;
  taskId: string;
  trial?: number;
  from: Exclude<RunStatus, 'running'>;
  to: Exclude<RunStatus, 'running'>;
  /** A run lost to infrastructure and run again: its eval does not count it. */
  retried?: true;
}

/** What `regrade` did. */
export interface RegradeReport {
  /** Runs graded again (with those an eval retried, which it does not count). */
  runs: number;
  /** Their new statuses. */
  passed: number;
  failed: number;
  errors: number;
  /** Runs that were never graded (or never finished), left as they were. */
  skipped: number;
  /** Regraded runs whose status changed, by task id, then trial, then run id. */
  changed: RegradeChange[];
  /** Runs that could not be graded again (world_changed, ...), in the same order: their results stay as they were. */
  refused: RegradeRefusal[];
  /** The recomputed summaries of the evals whose runs were regraded. */
  evals: EvalSummary[];
  durationMs: number;
}

/** Grades stored runs again (see the module comment). */
export async function regrade(options: RegradeOptions): Promise<RegradeReport> {
  const t0 = performance.now();
  const concurrency = options.concurrency ?? DEFAULT_REGRADE_CONCURRENCY;
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new SiloError('SILO_USAGE', `concurrency must be an integer >= 1 (got ${concurrency})`);
  const target = resolveTarget(options.target, resolve(options.outDir ?? DEFAULT_OUT_DIR));
  const { outDir } = target;
  // A single run of an eval: that eval's summary is recomputed too, so it must have finished.
  const evalId = target.evalId ?? target.runDirs.map((dir) => readJson<RunRecord>(join(dir, 'run.json'))?.evalId).find((id) => id !== undefined);
  const evalSummary = evalId !== undefined && existsSync(new EvalStore(outDir, evalId).summaryFile) ? readFinishedSummary(outDir, evalId) : undefined;
  const findTask = taskFinder(options.tasks, evalSummary?.options.taskFiles);

  const dirs = target.runDirs.filter((dir) => existsSync(join(dir, 'run.json')));
  let skipped = target.runDirs.length - dirs.length; // runs with a line but no folder (lost with a queue worker)
  const regradedAt = new Date().toISOString();
  const outcomes: RunRegrade[] = new Array<RunRegrade>(dirs.length);
  let next = 0;
  let done = 0;
  const slot = async (): Promise<void> => {
    while (next < dirs.length) {
      const i = next++;
      outcomes[i] = await regradeRun(dirs[i]!, findTask, regradedAt);
      options.onProgress?.({ done: ++done, total: dirs.length });
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, Math.max(1, dirs.length)) }, slot));

  const regraded = outcomes.filter((o): o is Extract<RunRegrade, { kind: 'regraded' }> => o.kind === 'regraded');
  skipped += outcomes.filter((o) => o.kind === 'skipped').length;
  const refused = outcomes
    .filter((o): o is Extract<RunRegrade, { kind: 'refused' }> => o.kind === 'refused')
    .map(({ kind: _kind, ...r }) => r)
    .sort(byTaskAndTrial);
  // The evals these runs count in: the one asked for, or the eval a single run belongs to.
  const evalIds = new Set<string>();
  if (target.evalId !== undefined) evalIds.add(target.evalId);
  for (const o of regraded) if (o.run.evalId !== undefined && existsSync(new EvalStore(outDir, o.run.evalId).summaryFile)) evalIds.add(o.run.evalId);
  const byRun = new Map(regraded.map((o) => [o.run.runId, o]));
  const evals: EvalSummary[] = [];
  const retried = new Set<string>();
  for (const evalId of evalIds) {
    const recomputed = await recomputeEval(new EvalStore(outDir, evalId), byRun, regradedAt, outDir);
    if (!recomputed) continue;
    evals.push(recomputed.summary);
    for (const id of recomputed.retried) retried.add(id);
  }
  const changed = regraded
    .filter((o) => o.from !== o.result.status)
    .map((o): RegradeChange => ({
      runId: o.run.runId,
      taskId: o.run.taskId,
      ...(o.run.trial === undefined ? {} : { trial: o.run.trial }),
      from: o.from,
      to: o.result.status,
      ...(retried.has(o.run.runId) ? { retried: true as const } : {}),
    }))
    .sort(byTaskAndTrial);
  const count = (status: RunStatus): number => regraded.filter((o) => o.result.status === status).length;
  return {
    runs: regraded.length,
    passed: count('passed'),
    failed: count('failed'),
    errors: count('error'),
    skipped,
    changed,
    refused,
    evals,
    durationMs: performance.now() - t0,
  };
}

/**
 * Rewrites an eval's run lines for the regraded runs it holds and recomputes its summary (and its
 * comparison with its baseline, when that eval is still there). Null when it holds none of them.
 */
async function recomputeEval(
  store: EvalStore,
  regraded: ReadonlyMap<string, { result: Parameters<typeof toLine>[0] }>,
  regradedAt: string,
  outDir: string,
): Promise<{ summary: EvalSummary; retried: string[] } | null> {
  const old = store.readSummary();
  const lines = [...store.readLines()];
  if (!lines.some((line) => regraded.has(line.runId))) return null;
  const updated = lines.map((line): EvalRunLine => {
    const r = regraded.get(line.runId);
    return r ? toLine({ ...r.result, durationMs: line.durationMs }, line.trial, line.retried === true) : line;
  });
  const tally = new Tally(old.tasks.map((t) => t.taskId));
  const counted = asCounted(updated);
  for (const line of counted) tally.add(line);
  let summary: EvalSummary = { ...old, ...tally.stats(old.trials), regradedAt };
  if (old.baseline) {
    const baseline = new EvalStore(outDir, old.baseline.evalId);
    if (existsSync(baseline.summaryFile)) summary = withBaseline(summary, baseline.readSummary());
  }
  await store.rewriteLines(updated);
  await store.writeSummary(summary);
  return { summary, retried: counted.filter((line) => line.retried && regraded.has(line.runId)).map((line) => line.runId) };
}

/** What a target names: run folders, and the eval they were taken from. */
/**
 * The order changes and refusals are listed in: by task id, then trial, then run id (a retried
 * pair's runs in the order they ran). Not the order of runs.jsonl, which is the order the runs
 * finished in, different at every eval.
 */
function byTaskAndTrial(a: { taskId: string; trial?: number; runId: string }, b: { taskId: string; trial?: number; runId: string }): number {
  if (a.taskId !== b.taskId) return a.taskId < b.taskId ? -1 : 1;
  if (a.trial !== b.trial) return (a.trial ?? -1) - (b.trial ?? -1);
  return a.runId < b.runId ? -1 : a.runId > b.runId ? 1 : 0;
}

interface Target {
  outDir: string;
  evalId?: string;
  runDirs: string[];
}

function resolveTarget(ref: string, outDir: string): Target {
  if (ref === '') throw new SiloError('SILO_USAGE', 'give an evalId, a runId, or a folder to regrade');
  if (existsSync(ref) && statSync(ref).isDirectory()) {
    const dir = resolve(ref);
    if (existsSync(join(dir, 'run.json'))) return { outDir: dirname(dirname(dir)), runDirs: [dir] };
    if (existsSync(join(dir, 'summary.json'))) return evalTarget(dirname(dirname(dir)), basename(dir));
    const evals = listEvalIds(dir).filter((id) => existsSync(join(dir, 'evals', id, 'summary.json')));
    if (evals.length === 1) return evalTarget(dir, evals[0]!);
    throw new SiloError(
      'SILO_USAGE',
      evals.length === 0
        ? `${dir} is not a run folder, an eval folder, or an --out folder with an eval; give one of those, or an evalId or runId`
        : `${dir} holds ${evals.length} evals; give one: ${join(dir, 'evals', evals[0]!)}`,
    );
  }
  // (an eval and its runs have ids made in the same milliseconds: a short prefix can name both)
  const evalIds = listEvalIds(outDir).filter((id) => existsSync(join(outDir, 'evals', id, 'summary.json')));
  const runIds = listRunIds(join(outDir, 'runs'));
  // An id given whole is that one, whatever else it begins or ends (`--eval-id 7`, say).
  const exact = (ids: string[]): string[] => ids.filter((id) => id.toUpperCase() === ref.toUpperCase());
  const whole = exact(evalIds).length + exact(runIds).length > 0;
  const evals = whole ? exact(evalIds).slice(0, 1) : matchIds(evalIds, ref);
  const runs = whole ? exact(runIds).slice(0, 1) : matchIds(runIds, ref);
  if (evals.length + runs.length > 1) {
    const named = [...evals, ...runs].slice(0, 3).join(', ');
    throw new SiloError('SILO_USAGE', `${ref} matches ${plural(evals.length, 'eval')} and ${plural(runs.length, 'run')} in ${outDir} (${named}${evals.length + runs.length > 3 ? ', ...' : ''}); give more of the id`);
  }
  if (evals.length === 1) return evalTarget(outDir, evals[0]!);
  if (runs.length === 1) return { outDir, runDirs: [join(outDir, 'runs', runs[0]!)] };
  throw new SiloError('SILO_USAGE', `no eval or run ${ref} in ${outDir}; give an evalId or runId, a unique prefix or suffix of one (see \`silo ls\`), or a folder`);
}

function evalTarget(outDir: string, evalId: string): Target {
  const store = new EvalStore(outDir, evalId);
  const ids = [...new Set([...store.readLines()].map((line) => line.runId))];
  return { outDir, evalId, runDirs: ids.map((id) => join(outDir, 'runs', id)) };
}

/** An eval's summary, refusing one that is still running (its runs would change under it). */
function readFinishedSummary(outDir: string, evalId: string): EvalSummary {
  const summary = new EvalStore(outDir, evalId).readSummary();
  if (summary.status === 'running') {
    throw new SiloError('SILO_USAGE', `eval ${evalId} is still running (or stopped without finishing: resume it with \`silo eval --resume ${evalId}\`); regrade it once it has finished`);
  }
  return summary;
}

/**
 * Where runs find their tasks: in the files given (`tasks`); else, for the runs of an eval, in the
 * eval's own task files (the run's file when it is one of them), as they are now; else (a run of
 * no eval) in the task file its run.json records. An eval's runs never take their task from
 * another file their run.json names: a queue worker writes that record, and regrading must not
 * import a file a worker chose. Each file is loaded once; one that does not load is an error to
 * fix, not a refusal.
 */
function taskFinder(paths: string[] | undefined, evalFiles: readonly string[] | undefined): TaskFinder {
  const files = new Map<string, Promise<Map<string, Task>>>();
  const load = (file: string): Promise<Map<string, Task>> => {
    let found = files.get(file);
    if (!found) files.set(file, (found = loadTasks([file]).then((loaded) => new Map(loaded.map((t) => [t.task.id, t.task])))));
    return found;
  };
  const search = async (list: readonly string[], id: string): Promise<Task | undefined> => {
    for (const file of list) {
      const task = (await load(file)).get(id);
      if (task) return task;
    }
    return undefined;
  };
  if (paths !== undefined) {
    const given = discoverTaskFiles(paths);
    return async (run) => (await search(given, run.taskId)) ?? `no task ${run.taskId} in ${given.join(', ')}`;
  }
  if (evalFiles !== undefined) {
    return async (run) => {
      const here = evalFiles.filter((file) => existsSync(file));
      if (here.length === 0) return `none of the eval's task files is here (${evalFiles.join(', ')}); give them with --tasks`;
      // The run's own file first: the one it was loaded from when it is still among them.
      const order = run.taskFile !== null && here.includes(run.taskFile) ? [run.taskFile, ...here.filter((f) => f !== run.taskFile)] : here;
      return (await search(order, run.taskId)) ?? `the eval's task files have no task ${run.taskId} any more (${here.join(', ')})`;
    };
  }
  return async (run) => {
    if (run.taskFile === null) return 'its task came from no file; give the task files with --tasks';
    if (!existsSync(run.taskFile)) return `its task file ${run.taskFile} is not here; give the task files with --tasks`;
    return (await load(run.taskFile)).get(run.taskId) ?? `${run.taskFile} has no task ${run.taskId} any more`;
  };
}

/** A regrade's one-line outcome, for people. */
export function describeRefusal(r: RegradeRefusal): string {
  return `${r.runId} ${r.taskId}${r.trial === undefined ? '' : ` trial ${r.trial}`}: ${r.reason}: ${r.message}`;
}
