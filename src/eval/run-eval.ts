/**
 * An eval: every selected task × k trials, run in parallel on one worker pool. Results stream to
 * disk (each run's folder, one line per run in runs.jsonl) and into a small tally; the summary is
 * rewritten as the eval goes. Cancel stops scheduling and aborts what is running; `resume` runs
 * only the (task, trial) pairs without a finished run. Infrastructure failures are retried.
 */
import { setMaxListeners } from 'node:events';
import { existsSync, rmdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { SiloError } from '../errors.js';
import { selectTasks } from '../filter.js';
import { loadTasks, type LoadedTask } from '../load.js';
import { DEFAULT_EVAL_CONCURRENCY, DEFAULT_OUT_DIR, DEFAULT_RETRIES, SUMMARY_WRITE_MS, resolveLimits } from '../options.js';
import { turnTaker } from '../time.js';
import { thisProcess } from '../owner.js';
import type { Isolation } from '../pool/pool.js';
import { createRunner } from '../pool/runners.js';
import type { AgentOptions, EvalOptionsRecord, EvalRunLine, EvalSummary, Limits, RunResult } from '../types.js';
import { agentNotFound, parseBuiltinAgent, requireAgentSdk } from '../agents/builtin.js';
import { withBaseline } from './compare.js';
import { baselineReader } from './compare-evals.js';
import { gatewayFor } from '../gateway/shared.js';
import { isInfrastructureFailure, rerunOnResume } from './counted.js';
import type { CacheMode } from '../gateway/cache.js';
import { checkProviders, type Provider } from '../gateway/providers.js';
import { discoverTaskFiles } from './discover.js';
import { localRunner, type RunnerFactory } from './runner.js';
import { inShard, type Shard } from './shard.js';
import { checkEvalId, EvalStore, newEvalId } from './store.js';
import { outDirAccess } from '../out-dir.js';
import { lockEval } from './lock.js';
import { resolveEvalId } from '../inspect/runs.js';
import { suspicion } from '../inspect/diagnose.js';
import { Tally } from './tally.js';
import { parseUserModel } from '../user/model-user.js';
import { userNote } from '../user/plan.js';

// For `silo eval`, which runs its rollouts on the sandbox it started early (src/cli/run-early.ts):
// from here, it loads no chunk of the bundle more.
export { localRunner };

/** Options of runEval. */
export interface EvalOptions {
  /** Task files or folders (see discoverTaskFiles). Not needed with `resume`. */
  paths?: string[];
  /** The agent module, or a built-in agent (`openai:<model>`, `anthropic:<model>`). Not needed with `resume`. */
  agent?: string;
  /**
   * Every agent worker's whole `process.env`. Only the names are stored in the summary (never the
   * values); `resume` needs the same names again.
   */
  env?: Record<string, string>;
  /** Handed to the agent as `options` (stored for `resume`). Built-in agents read `maxTurns`, `maxTokens`. */
  agentOptions?: AgentOptions;
  /** Providers the agent reaches through the model gateway (stored for `resume`); see RolloutOptions.providers. */
  providers?: Provider[];
  /** Model requests in flight upstream at once, per provider, across the eval's rollouts. Default 16. */
  modelConcurrency?: number;
  /** Store and replay model responses in this folder (not stored: a resume may change it). */
  modelCache?: string;
  /** `read`, `write` or `readwrite` (default). */
  modelCacheMode?: CacheMode;
  /** Trials per task (k). Default 1. */
  trials?: number;
  /** Rollouts running at once. Default 32 (agents mostly wait on models); a resumed eval keeps the one it was given. */
  concurrency?: number;
  /** Task ids or globs (OR), ANDed with `tag`. */
  task?: string[];
  tag?: string[];
  limits?: Partial<Limits>;
  /** Artifacts go to `<outDir>/runs/` and `<outDir>/evals/<evalId>/`. Default `.silo`. */
  outDir?: string;
  /** Times an infrastructure failure (crashed worker, internal error) is retried. Default 2. */
  retries?: number;
  /** Continue this eval (its id, or a unique prefix or suffix of it): its stored options are used; only unfinished pairs run. */
  resume?: string;
  /** An ungrounded answer fails the run (a failed `grounded` check) instead of passing with a warning. Stored for `resume`. */
  strict?: boolean;
  /** The LLM user (`provider:model`) of every task that has a user (`--user`). Stored for `resume`. */
  user?: string;
  /** Tasks that have a user run without one (`--solo`). Stored for `resume`. */
  solo?: boolean;
  /**
   * Told once per eval what the user should know but is not an error: tasks whose user has neither
   * script nor model, run solo without `--user`; `user` (or `solo`) given where no task has a user.
   */
  onNote?: (message: string) => void;
  /** The evalId of a new eval (letters, digits, `.`, `_`, `-`); a fresh ULID by default. */
  evalId?: string;
  /** Run only this shard of the (task, trial) pairs (see src/eval/shard.ts); stored for `resume`. */
  shard?: Shard;
  /** Where the rollouts run; this process's worker pool by default (see src/eval/runner.ts). */
  runner?: RunnerFactory;
  /** Warm, reused workers with a fresh agent module per rollout: for trusted agents only. */
  reuseWorkers?: boolean;
  /** Where agent workers live: `process` (default, a sandbox process) or `thread`. Not stored: a resume may change it. */
  isolation?: Isolation;
  /** Agents get no network (process isolation with Linux namespaces only). */
  noNetwork?: boolean;
  /** Cancels the eval: running rollouts end as `cancelled`, the summary says `cancelled`. */
  signal?: AbortSignal;
  /** Called after every run and every few seconds. */
  onProgress?: (progress: EvalProgress) => void;
  /**
   * An earlier eval (evalId, unique prefix or eval folder) to compare with when this one completes:
   * summary.json gets `baseline` (see compareEvals). Not stored: give it again with `resume`.
   */
  baseline?: string;
}

/** Where an eval stands. */
export interface EvalProgress {
  evalId: string;
  total: number;
  done: number;
  passed: number;
  failed: number;
  errors: number;
  retries: number;
  running: number;
  elapsedMs: number;
  /** Mean duration of the runs finished so far, ms (null before the first): the ETA's yardstick. */
  meanRunMs: number | null;
}

interface Pair {
  loaded: LoadedTask;
  trial: number;
}

export async function runEval(options: EvalOptions): Promise<EvalSummary> {
  const outDir = resolve(options.outDir ?? DEFAULT_OUT_DIR);
  if (options.concurrency !== undefined && (!Number.isInteger(options.concurrency) || options.concurrency < 1)) {
    throw new SiloError('SILO_USAGE', `concurrency must be an integer >= 1 (got ${options.concurrency})`);
  }
  // An id asked for is checked for its form here and for being free once the folder is ours.
  const evalId =
    options.resume !== undefined ? resolveEvalId(options.resume, outDir) : options.evalId !== undefined ? checkEvalId(options.evalId) : newEvalId(outDir, undefined);
  // A new eval's options are checked before anything is written.
  const fresh = options.resume === undefined ? recordOptions(options) : undefined;
  if (fresh) checkAgent(fresh.agent, options.agent);
  const store = new EvalStore(outDir, evalId);
  const created = [outDir, join(outDir, 'evals'), store.dir].filter((dir) => !existsSync(dir));
  // The folder is this process's until the eval ends: a second eval of the same id is refused.
  const lock = await outDirAccess(outDir, () => lockEval(store.dir, evalId));
  try {
    return await runLocked(options, outDir, evalId, store, fresh);
  } finally {
    lock.release();
    // An eval that stopped before writing anything leaves no empty folder behind.
    if (!existsSync(store.summaryFile)) for (const dir of created.reverse()) removeEmptyFolder(dir);
  }
}

async function runLocked(options: EvalOptions, outDir: string, evalId: string, store: EvalStore, fresh: EvalOptionsRecord | undefined): Promise<EvalSummary> {
  // Read under the lock: another process may have finished writing either since we looked.
  const previous = fresh ? undefined : store.readSummary();
  if (fresh && options.evalId !== undefined) newEvalId(outDir, options.evalId);
  const record = previous ? { ...previous.options } : fresh!;
  // A resumed eval keeps the concurrency it was given unless it is given another.
  const asked = options.concurrency ?? record.concurrency;
  if (asked === undefined) delete record.concurrency;
  else record.concurrency = asked;
  const concurrency = asked ?? DEFAULT_EVAL_CONCURRENCY;
  checkAgent(record.agent);
  resolveLimits(record.limits);
  const env = options.env ?? {};
  checkEnvNames(record.env ?? [], env, previous !== undefined);
  const baseline = options.baseline === undefined ? undefined : baselineReader(options.baseline, outDir);
  // One gateway for the eval: its cap on requests in flight holds across every rollout.
  const gateway = await gatewayFor(record.agent, record.providers ?? [], { ...options, user: record.user });

  const tasks = selectTasks(await loadTasks(record.taskFiles), { task: record.task, tag: record.tag });
  const note = userNote(tasks.map((t) => t.task), record);
  if (note) options.onNote?.(note);
  const tally = new Tally(tasks.map((t) => t.task.id));
  const finished = new Set<string>();
  // Attempts already made per pair: a resumed pair's next attempt gets a number of its own.
  const attempts = new Map<string, number>();
  if (previous) {
    for (const line of store.readLines()) {
      attempts.set(pairKey(line.taskId, line.trial), (attempts.get(pairKey(line.taskId, line.trial)) ?? 0) + 1);
      // A run lost to infrastructure (after its retries), or to the agent's model provider (a key
      // fixed since, say), is not finished: its pair runs again, and the lost run counts as a
      // retry. Cancelled runs are not counted at all.
      const lost = !line.retried && rerunOnResume(line);
      tally.add(lost ? { ...line, retried: true } : line);
      if (!line.retried && !lost && line.termination !== 'cancelled') finished.add(pairKey(line.taskId, line.trial));
    }
  }
  // Trial-major order: early results cover every task.
  const pairs: Pair[] = [];
  for (let trial = 0; trial < record.trials; trial++) {
    for (const [index, loaded] of tasks.entries()) {
      if (inShard(index, trial, record.shard) && !finished.has(pairKey(loaded.task.id, trial))) pairs.push({ loaded, trial });
    }
  }
  // Made before anything is written: a runner that cannot start leaves no half-written eval.
  const makeRunner: RunnerFactory =
    options.runner ??
    ((context) => {
      // A built-in agent's SDK is an optional dependency: missing, it is one line before anything runs.
      const builtin = parseBuiltinAgent(record.agent);
      if (builtin) requireAgentSdk(builtin);
      const pool = createRunner(options.isolation ?? 'process', { maxThreads: concurrency, reuse: record.reuseWorkers, ...(options.noNetwork ? { noNetwork: true } : {}) });
      // The sandbox boots while the eval sets up its first rollouts (if it has any left).
      if (pairs.length > 0) pool.warm?.();
      return Promise.resolve(localRunner(context, pool, concurrency));
    });
  const runner = await makeRunner({
    evalId,
    record,
    outDir,
    env,
    ...(gateway ? { gateway } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    ...(asked === undefined ? {} : { concurrency }),
    rollouts: pairs.length,
  });

  const started = previous ? new Date(previous.startedAt) : new Date();
  const t0 = performance.now();
  const summary = (status: EvalSummary['status']): EvalSummary => {
    const ended = status !== 'running';
    const durationMs = Math.round(performance.now() - t0) + (previous?.durationMs ?? 0);
    return {
      version: 1,
      evalId,
      status,
      startedAt: started.toISOString(),
      finishedAt: ended ? new Date().toISOString() : null,
      durationMs: ended ? durationMs : null,
      agent: record.agent,
      trials: record.trials,
      options: record,
      // While it runs: a summary left `running` by a process that is gone is reported crashed.
      ...(ended ? {} : { owner: thisProcess() }),
      ...tally.stats(record.trials),
    };
  };

  try {
    await outDirAccess(outDir, async () => {
      await store.open();
      await store.writeSummary(summary('running'));
    });
  } catch (error) {
    await runner.close(false);
    await gateway?.close();
    throw error;
  }
  const total = tally.counts().done + pairs.length;
  let running = 0;
  // A set-up error in one rollout (say the agent file was removed), or a progress callback that
  // throws, stops scheduling; the runs already under way finish, the summary says `error`, and
  // runEval rethrows it.
  let failure: { error: unknown } | undefined;
  const progress = (): void => {
    try {
      options.onProgress?.({ evalId, total, ...tally.counts(), retries: tally.retries, running, elapsedMs: performance.now() - t0, meanRunMs: tally.meanDurationMs() });
    } catch (error) {
      failure ??= { error };
    }
  };

  // The summary on disk follows the eval, without a write per run.
  let dirty = false;
  // Writes are chained, so the final summary is never overtaken by a periodic one.
  let writing = Promise.resolve();
  const timer = setInterval(() => {
    progress();
    if (!dirty) return;
    dirty = false;
    writing = writing.then(() => store.writeSummary(summary('running'))).catch(() => {});
  }, SUMMARY_WRITE_MS);
  timer.unref();

  const signal = options.signal;
  // Every running rollout listens to the eval's signal.
  if (signal) setMaxListeners(Math.min(runner.slots, pairs.length) + 16, signal);
  let next = 0;
  const recordRun = (result: RunResult, trial: number, retried: boolean): void => {
    const line = toLine(result, trial, retried);
    store.append(line);
    tally.add(line);
    dirty = true;
  };
  const runOne = async (pair: Pair): Promise<void> => {
    const key = pairKey(pair.loaded.task.id, pair.trial);
    for (let attempt = 0; ; attempt++) {
      const results = await runner.run({ loaded: pair.loaded, trial: pair.trial, attempt: (attempts.get(key) ?? 0) + attempt });
      const result = results.at(-1);
      // Runs lost on the way (a queue worker that died) are retries, never trials.
      for (const lost of results.slice(0, -1)) recordRun(lost, pair.trial, true);
      if (!result) return;
      const retry = isInfrastructureFailure(result) && attempt < record.retries && !signal?.aborted;
      recordRun(result, pair.trial, retry);
      if (!retry) return;
      progress();
    }
  };
  let withdrawn: Promise<void> | undefined;
  const withdraw = (): void => {
    withdrawn ??= runner.withdraw().catch((error: unknown) => {
      failure ??= { error };
    });
  };
  signal?.addEventListener('abort', withdraw, { once: true });
  const canStart = (): boolean => next < pairs.length && !signal?.aborted && !failure;
  // One rollout starts per turn of the event loop. Started all at once, the slots would run every
  // rollout's synchronous start (run folder, world, agent preparation) back to back before any
  // I/O is looked at, so no worker (and no sandbox) could begin before the last one was set up.
  const nextTurn = turnTaker();
  const slot = async (): Promise<void> => {
    while (canStart()) {
      await nextTurn();
      if (!canStart()) break;
      const pair = pairs[next++]!;
      running++;
      try {
        await runOne(pair);
      } catch (error) {
        failure ??= { error };
        withdraw();
      } finally {
        running--;
      }
      progress();
    }
  };
  try {
    await Promise.all(Array.from({ length: Math.min(runner.slots, Math.max(1, pairs.length)) }, slot));
  } finally {
    clearInterval(timer);
    signal?.removeEventListener('abort', withdraw);
    await withdrawn;
    await runner.close(!failure && tally.counts().done >= total);
    await gateway?.close();
    await store.close();
  }
  // A cancel that came after the last pair finished cancelled nothing.
  // The last progress report comes first: if it throws, the summary must say `error`.
  progress();
  const cancelled = signal?.aborted === true && tally.counts().done < total;
  const ended = summary(failure ? 'error' : cancelled ? 'cancelled' : 'completed');
  const final = baseline && ended.status === 'completed' ? withBaseline(ended, baseline()) : ended;
  await writing;
  await store.writeSummary(final);
  if (failure) throw failure.error;
  return final;
}

/** A run's line in runs.jsonl (also what `regrade` rewrites a regraded run's line with). */
export function toLine(result: RunResult, trial: number, retried: boolean): EvalRunLine {
  const failedChecks = result.checks.filter((c) => !c.pass).slice(0, 20);
  const suspicious = suspicion(result.status, result.diagnosis);
  return {
    runId: result.runId,
    taskId: result.taskId,
    trial,
    status: result.status,
    score: result.score,
    termination: result.termination,
    durationMs: result.durationMs,
    ...(retried ? { retried: true } : {}),
    ...(failedChecks.length > 0 ? { failed: failedChecks.map((c) => (c.message === undefined ? { name: c.name } : { name: c.name, message: c.message })) } : {}),
    ...(result.error ? { error: { code: result.error.code, message: result.error.message } } : {}),
    ...(suspicious ? { suspicious: suspicious.message } : {}),
    ...(result.usage ? { usage: result.usage } : {}),
    ...(result.userUsage ? { userUsage: result.userUsage } : {}),
  };
}

function recordOptions(options: EvalOptions): EvalOptionsRecord {
  if (!options.paths || options.paths.length === 0) {
    // (`tasks` is the name people guess: the option is `paths`, as `silo eval <paths...>` takes them)
    const named = 'tasks' in options ? 'runEval takes the task files or folders as paths, not tasks' : 'an eval needs task files or folders, as paths';
    throw new SiloError('SILO_USAGE', `${named}: runEval({ paths: ['evals/tasks.ts'], agent: 'evals/agents/solver.ts' })`);
  }
  if (!options.agent) throw new SiloError('SILO_USAGE', 'an eval needs an agent: --agent <file>');
  const trials = options.trials ?? 1;
  const retries = options.retries ?? DEFAULT_RETRIES;
  if (!Number.isInteger(trials) || trials < 1) throw new SiloError('SILO_USAGE', `trials must be an integer >= 1 (got ${trials})`);
  if (!Number.isInteger(retries) || retries < 0) throw new SiloError('SILO_USAGE', `retries must be an integer >= 0 (got ${retries})`);
  const shard = options.shard;
  if (shard && !(Number.isInteger(shard.count) && Number.isInteger(shard.index) && shard.index >= 1 && shard.index <= shard.count)) {
    throw new SiloError('SILO_USAGE', `shard must be i/n with 1 <= i <= n (got ${shard.index}/${shard.count})`);
  }
  return {
    taskFiles: discoverTaskFiles(options.paths),
    agent: parseBuiltinAgent(options.agent) ? options.agent : resolve(options.agent),
    trials,
    task: options.task ?? [],
    tag: options.tag ?? [],
    limits: options.limits ?? {},
    retries,
    reuseWorkers: options.reuseWorkers ?? false,
    ...(options.env && Object.keys(options.env).length > 0 ? { env: Object.keys(options.env).sort() } : {}),
    ...(options.agentOptions ? { agentOptions: options.agentOptions } : {}),
    ...(shard ? { shard: { index: shard.index, count: shard.count } } : {}),
    ...(options.strict ? { strict: true as const } : {}),
    ...(options.providers && options.providers.length > 0 ? { providers: checkProviders(options.providers) } : {}),
    ...(options.user === undefined ? {} : { user: `${parseUserModel(options.user).provider}:${parseUserModel(options.user).model}` }),
    ...(options.solo ? { solo: true as const } : {}),
  };
}

/** The agent gets the variables the eval was started with; a resumed eval must be given the same names. */
function checkEnvNames(stored: readonly string[], env: Record<string, string>, resuming: boolean): void {
  if (!resuming) return;
  const given = Object.keys(env).sort();
  if (given.join('\u0000') !== [...stored].sort().join('\u0000')) {
    const names = stored.length > 0 ? stored.map((n) => `--env ${n}`).join(' ') : 'no --env';
    throw new SiloError('SILO_USAGE', `this eval's agent was given ${names}; resume it with the same (got ${given.length > 0 ? given.join(', ') : 'none'})`);
  }
}

/** `given`: the agent as the user wrote it (`agent` is resolved), for agentNotFound's hint. */
function checkAgent(agent: string, given = agent): void {
  if (parseBuiltinAgent(agent)) return;
  if (!existsSync(agent) || !statSync(agent).isFile()) {
    throw agentNotFound(agent, given);
  }
}

function removeEmptyFolder(dir: string): void {
  try {
    rmdirSync(dir);
  } catch {
    // not empty, or gone: leave it
  }
}

function pairKey(taskId: string, trial: number): string {
  return `${trial}\u0000${taskId}`;
}
