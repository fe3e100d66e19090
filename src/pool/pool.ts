/**
 * The worker pool: piscina pools keyed by memory limit, each worker single-use. A worker posts
 * its rollout's completion on the rollout's own port and exits; piscina then rejects the task
 * ("worker exited") and starts a replacement in the background, so the next rollout usually
 * finds a warm, never-used thread.
 */
import { Piscina } from 'piscina';
import type { MessagePort } from 'node:worker_threads';
import { WORKER_ENTRY } from '../paths.js';
import { isTypeScript } from '../typescript.js';
import { BRAND, type WorkerTask } from '../protocol.js';


/**
 * Workers kept warm per pool. Each is used once, so a spare that finished warming during the
 * previous rollout is what makes back-to-back rollouts fast (a TypeScript worker takes ~100 ms
 * to warm; see prepareWorker).
 */
const DEFAULT_WARM_WORKERS = 2;

/** How a worker's task ended, from the pool's point of view. */
export type WorkerExit =
  | { kind: 'exited'; message: string }
  | { kind: 'out_of_memory'; message: string }
  | { kind: 'terminated'; message: string };

export interface AgentPoolOptions {
  /** Most agent workers alive at once (running rollouts). */
  maxThreads?: number;
  /** Workers kept warm, ready for the next rollout. */
  minThreads?: number;
  /**
   * Reuse workers across rollouts (a fresh agent module instance each time). Faster, but what
   * an agent leaves in its thread (globals, patched built-ins) reaches later rollouts: trusted
   * agents only.
   */
  reuse?: boolean;
}

/** Runs agents in isolated, single-use worker threads. */
export class AgentPool {
  /**
   * Keyed by heap limit, by whether workers come with TypeScript support and by the environment
   * the workers get (a worker's `process.env` is fixed when it starts).
   */
  readonly #pools = new Map<string, Piscina>();
  readonly #options: Required<AgentPoolOptions>;

  constructor(options: AgentPoolOptions = {}) {
    const maxThreads = options.maxThreads ?? 64;
    this.#options = {
      maxThreads,
      minThreads: Math.min(options.minThreads ?? DEFAULT_WARM_WORKERS, maxThreads),
      reuse: options.reuse ?? false,
    };
  }

  /**
   * Starts `task` in a fresh worker with a heap of `memoryMb` and `env` as its whole
   * `process.env`; resolves when the worker is gone. Aborting `terminate` terminates the worker
   * (used after the grace period).
   */
  async run(
    task: Omit<WorkerTask, 'brand' | 'port' | 'exitAfter'>,
    port: MessagePort,
    memoryMb: number,
    terminate: AbortSignal,
    env: Readonly<Record<string, string>> = {},
  ): Promise<WorkerExit> {
    const message: WorkerTask = { ...task, brand: BRAND, port, exitAfter: !this.#options.reuse };
    try {
      await this.#pool(memoryMb, isTypeScript(task.agentPath), env).run(message, { transferList: [port], signal: terminate });
      return { kind: 'exited', message: 'the worker finished its task' };
    } catch (err) {
      const e = err as { code?: unknown; name?: unknown; message?: unknown };
      const text = String(e.message ?? err);
      if (e.code === 'ERR_WORKER_OUT_OF_MEMORY') return { kind: 'out_of_memory', message: text };
      if (e.name === 'AbortError') return { kind: 'terminated', message: text };
      return { kind: 'exited', message: text };
    }
  }

  /** Stops every worker. */
  async destroy(): Promise<void> {
    const pools = [...this.#pools.values()];
    this.#pools.clear();
    await Promise.all(pools.map((p) => p.destroy()));
  }

  #pool(memoryMb: number, typescript: boolean, env: Readonly<Record<string, string>>): Piscina {
    const key = `${memoryMb}:${typescript ? 'ts' : 'js'}:${JSON.stringify(Object.entries(env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))}`;
    let pool = this.#pools.get(key);
    if (!pool) {
      pool = new Piscina({
        filename: WORKER_ENTRY,
        minThreads: this.#options.minThreads,
        maxThreads: this.#options.maxThreads,
        // One rollout per worker, and the worker's event loop stays free for its port.
        concurrentTasksPerWorker: 1,
        atomics: 'disabled',
        // A copy: the worker's whole environment is exactly these variables.
        env: { ...env },
        resourceLimits: { maxOldGenerationSizeMb: memoryMb },
        // TypeScript workers register tsx as they start, while warm and idle (see prepareWorker).
        workerData: { typescript },
        recordTiming: false,
      });
      // A worker that dies with no task (e.g. while warming) has no promise to reject.
      pool.on('error', () => {});
      this.#pools.set(key, pool);
    }
    return pool;
  }
}

let shared: AgentPool | undefined;

/** The process-wide pool used when no pool is passed to runRollout. */
export function sharedPool(): AgentPool {
  shared ??= new AgentPool();
  return shared;
}

/** Stops the process-wide pool (the CLI calls this before exiting). */
export async function closeSharedPool(): Promise<void> {
  const pool = shared;
  shared = undefined;
  await pool?.destroy();
}
