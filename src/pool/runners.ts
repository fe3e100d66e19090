/**
 * Which runner a rollout's workers get: a sandbox process (the default) or threads of this
 * process. Apart from pool.ts so that the sandbox process, which runs a thread pool, does not load
 * the host's side of the sandbox (bubblewrap, the jail's mounts) as it starts.
 */
import { SiloError } from '../errors.js';
import { SandboxPool } from '../sandbox/pool.js';
import { atShutdown } from '../shutdown.js';
import { AgentPool, type AgentPoolOptions, type AgentRunner, type Isolation } from './pool.js';

/** A runner of agent workers for `isolation`, with the pool options given. */
export function createRunner(isolation: Isolation, options: AgentPoolOptions & { noNetwork?: boolean } = {}): AgentRunner {
  const { noNetwork, ...pool } = options;
  if (isolation === 'thread') {
    if (noNetwork) throw new SiloError('SILO_USAGE', '--no-network needs --isolation process');
    return new AgentPool(pool);
  }
  return new SandboxPool({ ...pool, ...(noNetwork ? { noNetwork } : {}) });
}

const shared = new Map<Isolation, AgentRunner>();

/** The process-wide runner used when no pool is passed to runRollout. */
export function sharedPool(isolation: Isolation = 'process'): AgentRunner {
  let runner = shared.get(isolation);
  if (!runner) {
    shared.set(isolation, (runner = createRunner(isolation)));
    atShutdown(closeSharedPool);
  }
  return runner;
}

/** Stops the process-wide runners (the CLI calls this before exiting). */
export async function closeSharedPool(): Promise<void> {
  const runners = [...shared.values()];
  shared.clear();
  await Promise.all(runners.map((r) => r.destroy()));
}
