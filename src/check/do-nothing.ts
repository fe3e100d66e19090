/**
 * The do-nothing check: a real rollout of the task with an agent that makes no tool calls. A
 * task it passes is a warning, since its verifier may not check what the instruction asks; a
 * rollout that cannot be graded (the verifier throws, say) is an error.
 */
import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { SiloError } from '../errors.js';
import type { LoadedTask } from '../load.js';
import { PACKAGE_ROOT } from '../paths.js';
import type { AgentPool } from '../pool/pool.js';
import { runRollout } from '../rollout/rollout.js';
import type { Limits } from '../types.js';
import type { Finding } from './types.js';

/** The built agent (see do-nothing-agent.ts); workers only run built JavaScript. */
export const DO_NOTHING_AGENT = join(PACKAGE_ROOT, 'dist', 'src', 'check', 'do-nothing-agent.js');

/** The agent returns at once: a short wall-clock limit is plenty, and bounds a stuck rollout. */
export const DO_NOTHING_LIMITS: Readonly<Partial<Limits>> = Object.freeze({ timeoutMs: 10_000, graceMs: 500 });

/** Throws a set-up error when the built agent is missing (Silo run from sources, not built). */
export function assertDoNothingAgent(): void {
  if (!existsSync(DO_NOTHING_AGENT)) {
    throw new SiloError('SILO_AGENT_NOT_FOUND', `the built-in do-nothing agent is missing (${DO_NOTHING_AGENT}); build Silo with \`npm run build\``);
  }
}

export interface DoNothingOptions {
  pool: AgentPool;
  /** A temporary artifact folder; each run's folder is removed once it is read. */
  outDir: string;
  seed: number;
  signal?: AbortSignal;
}

/** The findings of one do-nothing rollout; null when it was cancelled. */
export async function checkDoNothing({ task, file }: LoadedTask, options: DoNothingOptions): Promise<Finding[] | null> {
  const result = await runRollout({
    task,
    taskFile: file,
    agent: DO_NOTHING_AGENT,
    limits: DO_NOTHING_LIMITS,
    seed: options.seed,
    outDir: options.outDir,
    pool: options.pool,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  rmSync(result.runDir, { recursive: true, force: true });
  if (result.error?.code === 'cancelled') return null;
  const at = { check: 'do_nothing_fails', taskId: task.id } as const;
  if (result.status === 'passed') {
    return [{ ...at, code: 'do_nothing_passes', message: 'passes with an agent that does nothing: its verifier may not check what the instruction asks' }];
  }
  if (result.status === 'error') {
    const error = result.error ?? { code: 'internal_error', message: 'the rollout ended without a grade' };
    return [{ ...at, code: 'do_nothing_error', message: `a rollout with an agent that does nothing could not be graded (${error.code}): ${error.message}` }];
  }
  return [];
}
