/**
 * Single-use worker threads, a few started ahead: what an AgentPool runs rollouts on unless its
 * workers are reused (reused.ts).
 *
 * Each worker runs workers/agent.cjs as its main script, takes one task from its parent port and
 * ends (the worker runtime's `exitAfter`); a rollout is over, for this pool, when its worker has
 * exited, never on anything the worker says. Spares boot in the background so that the next
 * rollout finds a thread already started; a task's thread is replaced once it has exited.
 *
 * Not piscina's threads: a piscina worker loaded piscina's own worker script and its handshake on
 * top of Silo's (~8–10 ms of a ~55 ms thread start on a 2-core VM, measured against a bare
 * Worker), and each rollout is one task on a thread that then exits, which needs no balancing.
 */
import { Worker, type MessagePort } from 'node:worker_threads';

export interface FreshWorkersOptions {
  /** The script every worker runs (it takes its task from its parent port). */
  filename: string;
  /** Workers kept started ahead, ready for the next task. */
  spares: number;
  /** Most workers alive at once, running or spare; a task past it waits for one to exit. */
  max: number;
  /** The worker's whole `process.env`. */
  env: Readonly<Record<string, string>>;
  /** Node flags of the worker (its permissions). */
  execArgv: readonly string[];
  /** The worker's V8 heap limit. */
  memoryMb: number;
}

/** How a task's worker ended. */
export interface FreshExit {
  kind: 'exited' | 'out_of_memory' | 'terminated';
  message: string;
}

interface Thread {
  worker: Worker;
  /** Settles when the thread has exited. */
  gone: Promise<FreshExit>;
  /** Terminated on a task's signal (not a crash of its own). */
  aborted: boolean;
}

export class FreshWorkers {
  readonly #options: FreshWorkersOptions;
  readonly #spares: Thread[] = [];
  readonly #threads = new Set<Thread>();
  /** Tasks waiting for a thread (all `max` alive). */
  readonly #waiting: Array<() => void> = [];
  #destroyed = false;

  constructor(options: FreshWorkersOptions) {
    this.#options = options;
  }

  /** Starts the spares now. */
  warm(): void {
    this.#topUp();
  }

  /**
   * Runs `task` (its `port` transferred) on a thread of its own; resolves when that thread has
   * exited. Aborting `signal` terminates the thread (or drops the task while it waits for one).
   */
  async run(task: unknown, port: MessagePort, signal: AbortSignal): Promise<FreshExit> {
    while (this.#spares.length === 0 && this.#threads.size >= this.#options.max) {
      if (this.#destroyed) return destroyedExit();
      if (signal.aborted) return { kind: 'terminated', message: 'the task was aborted while it waited for a thread' };
      await waitForRoom(this.#waiting, signal);
    }
    if (this.#destroyed) return destroyedExit();
    if (signal.aborted) return { kind: 'terminated', message: 'the task was aborted before its thread started' };
    let thread: Thread;
    try {
      thread = this.#spares.shift() ?? this.#start();
    } catch (err) {
      return { kind: 'exited', message: `the worker could not start: ${err instanceof Error ? err.message : String(err)}` };
    }
    // Held by the caller now (a spare does not keep the process alive).
    thread.worker.ref();
    const abort = (): void => {
      thread.aborted = true;
      void thread.worker.terminate();
    };
    signal.addEventListener('abort', abort, { once: true });
    let unposted: unknown;
    try {
      thread.worker.postMessage(task, [port]);
    } catch (err) {
      // (a task structured clone refuses) its thread would wait for it for ever
      unposted = err;
      void thread.worker.terminate();
    }
    try {
      const exit = await thread.gone;
      if (unposted === undefined) return exit;
      return { kind: 'exited', message: `the task could not be posted to its worker: ${unposted instanceof Error ? unposted.message : String(unposted)}` };
    } finally {
      signal.removeEventListener('abort', abort);
      // Its replacement starts now, not while it runs: a thread booting beside a running agent
      // takes the CPU from it (pinned to one CPU, a tool call took twice as long meanwhile).
      this.#topUp();
    }
  }

  /** Ends every thread, running or spare; tasks still waiting for one end too. */
  async destroy(): Promise<void> {
    this.#destroyed = true;
    for (const wake of this.#waiting.splice(0)) wake();
    const threads = [...this.#threads];
    this.#spares.length = 0;
    await Promise.all(
      threads.map((thread) => {
        thread.aborted = true;
        return thread.worker.terminate().then(() => thread.gone);
      }),
    );
  }

  #topUp(): void {
    if (this.#destroyed) return;
    try {
      while (this.#spares.length < this.#options.spares && this.#threads.size < this.#options.max) {
        const thread = this.#start();
        thread.worker.unref();
        this.#spares.push(thread);
      }
    } catch {
      // (a worker that cannot even be constructed) the task that needs one says why
    }
  }

  #start(): Thread {
    const worker = newWorker(this.#options);
    let error: unknown;
    worker.on('error', (err) => (error ??= err));
    let exited!: (exit: FreshExit) => void;
    const thread: Thread = { worker, aborted: false, gone: new Promise<FreshExit>((resolve) => (exited = resolve)) };
    worker.once('exit', (code) => {
      this.#threads.delete(thread);
      const spare = this.#spares.indexOf(thread);
      if (spare >= 0) this.#spares.splice(spare, 1);
      this.#waiting.shift()?.();
      exited(exitOf(code, error, thread.aborted));
    });
    this.#threads.add(thread);
    return thread;
  }

}

/**
 * Resolves when a waker put in `waiting` is called (the pool has room, or is destroyed), or
 * `signal` aborts (its waker is taken out again).
 */
export function waitForRoom(waiting: Array<() => void>, signal: AbortSignal): Promise<void> {
  return new Promise<void>((resolve) => {
    const wake = (): void => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    };
    const onAbort = (): void => {
      const i = waiting.indexOf(wake);
      if (i >= 0) waiting.splice(i, 1);
      resolve();
    };
    waiting.push(wake);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

/** A worker running `filename` with exactly `env`, the flags `execArgv` and a heap of `memoryMb`. */
export function newWorker({ filename, env, execArgv, memoryMb }: Pick<FreshWorkersOptions, 'filename' | 'env' | 'execArgv' | 'memoryMb'>): Worker {
  return new Worker(filename, {
    // A copy: the worker's whole environment is exactly these variables.
    env: { ...env },
    execArgv: [...execArgv],
    resourceLimits: { maxOldGenerationSizeMb: memoryMb },
  });
}

/** How a task ends whose pool was destroyed. */
export function destroyedExit(): FreshExit {
  return { kind: 'terminated', message: 'the worker pool was closed' };
}

/** How a worker that exited with `code` (after `error`, if any) ended its task. */
export function exitOf(code: number, error: unknown, aborted: boolean): FreshExit {
  const e = error as { code?: unknown; message?: unknown } | undefined;
  if (e?.code === 'ERR_WORKER_OUT_OF_MEMORY') return { kind: 'out_of_memory', message: String(e.message) };
  if (aborted) return { kind: 'terminated', message: 'the worker was terminated' };
  if (e !== undefined) return { kind: 'exited', message: String(e.message ?? e) };
  return { kind: 'exited', message: code === 0 ? 'the worker finished its task' : `the worker exited with code ${code}` };
}
