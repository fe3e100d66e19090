/**
 * `silo check`: lints task files. Each distinct environment is checked once (fresh and
 * deterministic worlds, strict schemas); each task gets a do-nothing rollout and, when it has a
 * solution, a replay of it. Nothing is left behind: the rollouts write to a temporary folder.
 */
import { setMaxListeners } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { SiloError } from '../errors.js';
import { discoverTaskFiles } from '../eval/discover.js';
import { selectTasks } from '../filter.js';
import { loadTasks, type LoadedTask } from '../load.js';
import { resolveSeed } from '../options.js';
import { AgentPool } from '../pool/pool.js';
import type { Environment } from '../types.js';
import { assertDoNothingAgent, checkDoNothing } from './do-nothing.js';
import { checkEnvironment } from './environment.js';
import { checkSolution } from './solution.js';
import { CHECK_NAMES, WARNING_CODES, type CheckName, type CheckOptions, type CheckReport, type CheckSummary, type Finding } from './types.js';
import { CHECK_DEFAULTS } from '../options.js';

export { CHECK_DEFAULTS };

/** Loads task files (or folders, as `silo eval` reads them) and checks their tasks. */
export async function checkTasks(paths: readonly string[], options: CheckOptions = {}): Promise<CheckReport> {
  if (paths.length === 0) throw new SiloError('SILO_USAGE', 'give task files to check, e.g. `silo check evals/tasks.ts` (what `silo init` writes)');
  const loaded = await loadTasks(discoverTaskFiles(paths));
  const filters = { ...(options.task ? { task: options.task } : {}), ...(options.tag ? { tag: options.tag } : {}) };
  return checkLoadedTasks(selectTasks(loaded, filters), options);
}

/** Checks tasks already loaded (see loadTasks). */
export async function checkLoadedTasks(tasks: readonly LoadedTask[], options: CheckOptions = {}): Promise<CheckReport> {
  const concurrency = options.concurrency ?? CHECK_DEFAULTS.concurrency;
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new SiloError('SILO_USAGE', `concurrency must be an integer >= 1 (got ${concurrency})`);
  const seed = resolveSeed(options.seed ?? CHECK_DEFAULTS.seed, () => CHECK_DEFAULTS.seed);
  assertDoNothingAgent();
  const t0 = performance.now();
  const { signal } = options;

  const byEnvironment = new Map<Environment, LoadedTask[]>();
  for (const t of tasks) {
    const group = byEnvironment.get(t.task.environment);
    if (group) group.push(t);
    else byEnvironment.set(t.task.environment, [t]);
  }

  const environmentFindings: Finding[] = [];
  const unusable = new Set<Environment>();
  const reliable = new Set<Environment>();
  let compared = 0;
  let tools = 0;
  for (const [environment, its] of byEnvironment) {
    const result = await checkEnvironment(environment, seed, its.length);
    environmentFindings.push(...result.findings);
    if (!result.usable) unusable.add(environment);
    if (result.reliable) reliable.add(environment);
    if (result.compared) compared += 1;
    tools += environment.tools.length;
  }

  // Findings per task, in task order whatever order the tasks finish in.
  const taskFindings: Finding[][] = tasks.map(() => []);
  const runnable = tasks.map((_, i) => i).filter((i) => !unusable.has(tasks[i]!.task.environment));
  let doNothingRan = 0;
  let solutionsRan = 0;
  let done = 0;
  const progress = (): void => {
    try {
      options.onProgress?.({ done, total: tasks.length, elapsedMs: performance.now() - t0 });
    } catch (error) {
      failure ??= { error };
    }
  };

  const outDir = mkdtempSync(join(tmpdir(), 'silo-check-'));
  // The built-in agent is trusted: warm, reused workers make hundreds of rollouts cheap. Every
  // thread is started ahead (minThreads), so the tasks spread over them from the first.
  const threads = Math.max(1, Math.min(concurrency, runnable.length));
  const pool = new AgentPool({ maxThreads: threads, minThreads: threads, reuse: true });
  if (signal) setMaxListeners(threads + 16, signal);
  let next = 0;
  // A fault in one slot stops the others from taking more tasks; it is rethrown once all have
  // stopped, so nothing runs after the pool is gone and the temporary folder removed.
  let failure: { error: unknown } | undefined;
  const slot = async (): Promise<void> => {
    try {
      await work();
    } catch (error) {
      failure ??= { error };
    }
  };
  const work = async (): Promise<void> => {
    while (next < runnable.length && !signal?.aborted && !failure) {
      const i = runnable[next++]!;
      const loaded = tasks[i]!;
      const nothing = await checkDoNothing(loaded, { pool, outDir, seed, ...(signal ? { signal } : {}) });
      if (nothing === null) return;
      doNothingRan += 1;
      taskFindings[i]!.push(...nothing);
      if (loaded.task.solution !== undefined && !signal?.aborted) {
        taskFindings[i]!.push(...(await checkSolution(loaded.task, seed, reliable.has(loaded.task.environment))));
        solutionsRan += 1;
      }
      done += 1;
      progress();
    }
  };
  try {
    // Tasks of an environment that cannot build worlds count as checked: their finding is the environment's.
    done = tasks.length - runnable.length;
    progress();
    await Promise.all(Array.from({ length: threads }, slot));
  } finally {
    await pool.destroy();
    rmSync(outDir, { recursive: true, force: true });
  }
  if (failure) throw failure.error;

  const findings = [...environmentFindings, ...taskFindings.flat()];
  const checked: Record<CheckName, [number, number]> = {
    fresh_state: [byEnvironment.size, 0],
    deterministic_state: [compared, byEnvironment.size - compared],
    tool_schemas: [tools, 0],
    do_nothing_fails: [doNothingRan, tasks.length - doNothingRan],
    solution_passes: [solutionsRan, tasks.length - solutionsRan],
  };
  const checks: CheckSummary[] = CHECK_NAMES.map((check) => {
    const of = findings.filter((f) => f.check === check);
    const warnings = of.filter((f) => WARNING_CODES.has(f.code)).length;
    return { check, checked: checked[check][0], skipped: checked[check][1], errors: of.length - warnings, warnings };
  });
  return {
    version: 1,
    tasks: tasks.length,
    environments: byEnvironment.size,
    durationMs: Math.round(performance.now() - t0),
    cancelled: signal?.aborted === true && done < tasks.length,
    checks,
    errors: findings.filter((f) => !WARNING_CODES.has(f.code)),
    warnings: findings.filter((f) => WARNING_CODES.has(f.code)),
  };
}
