/**
 * The worker pool, keyed by what a worker is started with (heap limit, environment, read access).
 * By default each worker is single-use (fresh.ts): it posts its rollout's completion on the
 * rollout's own port and exits, and a replacement has started in the background, so the next
 * rollout usually finds a warm, never-used thread. Reused workers (trusted agents) run many
 * rollouts each (reused.ts).
 */
import { availableParallelism } from 'node:os';
import { WORKER_ENTRY } from '../paths.js';
import { PortLink, RelayLink, type Link } from './ends.js';
import { permissionArgs } from './permissions.js';
import type { SandboxLevel } from '../sandbox/jail.js';
import { BRAND, type WorkerTask } from '../protocol.js';
import { FreshWorkers } from './fresh.js';
import { ReusedWorkers } from './reused.js';
import { copyForWorker } from './views.js';

/**
 * Workers kept warm per pool: two per core, at most 8. Each is used once, so a spare that finished
 * starting during earlier rollouts is what makes back-to-back rollouts fast. A thread takes longer
 * to start (~22 ms of CPU in Node 20) than a short rollout takes to run, so with one spare per core
 * each rollout waited for a start; with two, starts overlap the rollouts before them (measured on 2
 * cores: trivial rollouts back to back 24–27 ms → 16–18 ms; more spares gain little more).
 */
const DEFAULT_WARM_WORKERS = Math.min(8, 2 * availableParallelism());

/**
 * Most agents one reused worker runs at once. Agents that wait on a model spend almost no time on
 * the thread, so a few threads carry many rollouts; thread start-up (~25–35 ms of CPU each) is
 * what bounds a single-use pool, and starting many threads at once delays every agent's start.
 */
export const MAX_AGENTS_PER_REUSED_WORKER = 64;

/**
 * Agents per reused worker for `concurrency` rollouts at once: spread over the machine's cores (a
 * thread per core at least, for agents that compute), at most MAX_AGENTS_PER_REUSED_WORKER each.
 * 256 rollouts on 2 cores: 4 threads of 64; on 16 cores: 16 threads of 16.
 */
export function agentsPerReusedWorker(concurrency: number, cores = availableParallelism()): number {
  return Math.min(MAX_AGENTS_PER_REUSED_WORKER, Math.max(1, Math.ceil(concurrency / Math.max(1, cores))));
}

/** How a worker's task ended, from the pool's point of view, and how the worker was isolated. */
export type WorkerExit = (
  | { kind: 'exited'; message: string }
  | { kind: 'out_of_memory'; message: string }
  | { kind: 'terminated'; message: string }
) & { isolation?: Isolated };

/**
 * How an agent's worker was isolated: a thread of the host, or a sandbox process confined by
 * bubblewrap, by namespaces (unshare), or not at all (see src/sandbox/jail.ts).
 */
export type Isolated = 'thread' | SandboxLevel;

export interface AgentPoolOptions {
  /** Most agent workers alive at once (running rollouts). */
  maxThreads?: number;
  /** Workers kept warm, ready for the next rollout (default: two per core, at most 8). */
  minThreads?: number;
  /**
   * Reuse workers across rollouts (a fresh agent module instance each time), running several
   * agents at once in one thread (agentsPerReusedWorker). Faster, but what an agent leaves in
   * its thread (globals, patched built-ins) reaches other rollouts, the heap limit is shared, and
   * terminating one agent that ignores its signal ends the others in its thread: trusted agents
   * only.
   */
  reuse?: boolean;
  /**
   * The tasks given to run() hold typed arrays with their own bytes only, already (the sandbox's
   * link reads its messages so: deserializeOwn in src/sandbox/link.ts): they are posted as they
   * are, not copied first (see ownTask).
   */
  ownedTasks?: boolean;
}

/** Where rollouts' agent workers run: threads of this process, or a sandbox process. */
export interface AgentRunner {
  /**
   * True when agents run in threads of this process, and so share its file descriptors (which
   * Node's permission model does not guard): the host then checks the files it writes meanwhile.
   */
  readonly inProcess?: boolean;
  /** True when its workers run many rollouts each (no thread starts per rollout: see start-gate.ts). */
  readonly reusesWorkers?: boolean;
  /** A new link for one rollout: its `host` end goes to the HostChannel, the link to run(). */
  link(): Link;
  /**
   * Starts what the first rollout will need now, in the background: a sandbox process for workers
   * reading `readable`, and, given `worker` (the heap and environment the rollouts' workers will
   * have), their first workers. A rollout that turns out to need others starts its own.
   */
  warm?(readable?: readonly string[], worker?: WarmWorkers): void;
  /**
   * Starts `task` in a fresh worker connected to `link`, with a heap of `memoryMb`, `env` as its
   * whole `process.env` and read access to `readable` only; resolves when the worker is gone.
   * Aborting `terminate` terminates the worker (used after the grace period).
   */
  run(
    task: Omit<WorkerTask, 'brand' | 'port' | 'exitAfter'>,
    link: Link,
    memoryMb: number,
    terminate: AbortSignal,
    env: Readonly<Record<string, string>>,
    readable: readonly string[],
  ): Promise<WorkerExit>;
  /** Stops every worker. */
  destroy(): Promise<void>;
}

/** The workers to start ahead (AgentRunner.warm): their heap limit and their whole environment. */
export interface WarmWorkers {
  memoryMb: number;
  env: Readonly<Record<string, string>>;
}

/** Runs agents in isolated, single-use worker threads of this process. */
export class AgentPool implements AgentRunner {
  readonly inProcess = true;
  get reusesWorkers(): boolean {
    return this.#options.reuse;
  }
  /**
   * Keyed by heap limit, by the environment the workers get and by what they may read (a worker's
   * `process.env` and permissions are fixed when it starts).
   */
  readonly #pools = new Map<string, ReusedWorkers>();
  readonly #freshPools = new Map<string, FreshWorkers>();
  readonly #options: Required<AgentPoolOptions>;
  /** Agents one worker runs at once: 1, or several when workers are reused. */
  readonly #perWorker: number;
  /** destroy() was called (warm() starts nothing after it). */
  #destroyed = false;

  constructor(options: AgentPoolOptions = {}) {
    const reuse = options.reuse ?? false;
    // maxThreads counts rollouts at once; reused workers each carry several.
    const rollouts = options.maxThreads ?? 64;
    this.#perWorker = reuse ? agentsPerReusedWorker(rollouts) : 1;
    const maxThreads = Math.ceil(rollouts / this.#perWorker);
    this.#options = {
      maxThreads,
      minThreads: Math.min(options.minThreads ?? DEFAULT_WARM_WORKERS, maxThreads),
      reuse,
      ownedTasks: options.ownedTasks === true,
    };
  }

  /** A MessageChannel for a single-use worker; for a reused thread, a relay over the thread's own port (reused.ts). */
  link(): Link {
    return this.#options.reuse ? new RelayLink() : new PortLink();
  }

  /**
   * Starts `task` in a fresh worker (or a reused thread) with a heap of `memoryMb`, `env` as its
   * whole `process.env` and read access to `readable` only (see permissions.ts); resolves when the
   * worker is gone (a reused thread: when the task has ended in it). Aborting `terminate`
   * terminates the worker (used after the grace period).
   */
  async run(
    task: Omit<WorkerTask, 'brand' | 'port' | 'exitAfter'>,
    link: Link,
    memoryMb: number,
    terminate: AbortSignal,
    env: Readonly<Record<string, string>>,
    readable: readonly string[],
  ): Promise<WorkerExit> {
    const own = this.#options.ownedTasks ? task : ownTask(task);
    if (this.#options.reuse) {
      if (!(link instanceof RelayLink)) throw new Error('a thread pool runs rollouts on links it made (AgentPool.link())');
      return { ...(await this.#pool(memoryMb, env, readable).run({ ...own, brand: BRAND, exitAfter: false }, link, terminate)), isolation: 'thread' };
    }
    if (!(link instanceof PortLink)) throw new Error('a thread pool runs rollouts on links it made (AgentPool.link())');
    const port = link.workerPort;
    const message: WorkerTask = { ...own, brand: BRAND, port, exitAfter: true };
    return { ...(await this.#fresh(memoryMb, env, readable).run(message, port, terminate)), isolation: 'thread' };
  }

  /**
   * Starts the warm workers (minThreads) of the rollouts to come, with `worker`'s heap and
   * environment and read access to `readable`: they boot while the caller gets its first rollout
   * ready. The same workers a first rollout would have started.
   */
  warm(readable: readonly string[] = [], worker?: WarmWorkers): void {
    if (!worker || this.#destroyed) return;
    (this.#options.reuse ? this.#pool(worker.memoryMb, worker.env, readable) : this.#fresh(worker.memoryMb, worker.env, readable)).warm();
  }

  /** Stops every worker. */
  async destroy(): Promise<void> {
    this.#destroyed = true;
    const pools = [...this.#pools.values(), ...this.#freshPools.values()];
    this.#pools.clear();
    this.#freshPools.clear();
    await Promise.all(pools.map((p) => p.destroy()));
  }

  /** The single-use threads for workers of this heap, environment and read access (made on first use). */
  #fresh(memoryMb: number, env: Readonly<Record<string, string>>, readable: readonly string[]): FreshWorkers {
    const key = poolKey(memoryMb, env, readable);
    let pool = this.#freshPools.get(key);
    if (!pool) {
      pool = new FreshWorkers({
        filename: WORKER_ENTRY,
        spares: this.#options.minThreads,
        max: this.#options.maxThreads,
        env,
        // Narrowed: reads under `readable` only; no writes, processes, workers, addons or inspector.
        execArgv: permissionArgs(readable),
        memoryMb,
      });
      this.#freshPools.set(key, pool);
    }
    return pool;
  }

  /** The reused workers for workers of this heap, environment and read access (made on first use). */
  #pool(memoryMb: number, env: Readonly<Record<string, string>>, readable: readonly string[]): ReusedWorkers {
    const key = poolKey(memoryMb, env, readable);
    let pool = this.#pools.get(key);
    if (!pool) {
      pool = new ReusedWorkers({
        filename: WORKER_ENTRY,
        threads: this.#options.minThreads,
        max: this.#options.maxThreads,
        perThread: this.#perWorker,
        env,
        // Narrowed: reads under `readable` only; no writes, processes, workers, addons or inspector.
        execArgv: permissionArgs(readable),
        memoryMb,
      });
      this.#pools.set(key, pool);
    }
    return pool;
  }
}

/** A pool's key: a worker's heap limit, environment and permissions are fixed when it starts. */
function poolKey(memoryMb: number, env: Readonly<Record<string, string>>, readable: readonly string[]): string {
  const sortedEnv = Object.entries(env).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return JSON.stringify([memoryMb, sortedEnv, [...readable].sort()]);
}

/** Where agent workers live: a sandbox process (the default), or threads of this process. */
export type Isolation = 'process' | 'thread';

/**
 * The task as its worker gets it: the tools' schemas and the agent's options are the host's values
 * (a schema's `default`, options given through the API), and a typed array in them must not take
 * the rest of its buffer along (views.ts). A task that cannot be cloned goes as it is, and fails
 * to post, saying so.
 */
function ownTask<T>(task: T): T {
  try {
    return copyForWorker(task);
  } catch {
    return task;
  }
}
