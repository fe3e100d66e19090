/**
 * Reused worker threads (`--reuse-workers`, trusted agents): each thread runs many rollouts,
 * several at once, a fresh instance of the agent each time. What an AgentPool runs rollouts on
 * when its workers are reused (single-use threads are fresh.ts's).
 *
 * Each worker runs workers/agent.cjs as its main script. Its first message is a port of its own,
 * which only the runtime holds; the worker then closes its parent port, so nothing an agent posts
 * there reaches anyone. Everything else travels on that port, tagged with the task's id: the
 * tasks, what each rollout's runtime and the host say to each other (a rollout's messages reach
 * its RelayLink here), and each task's end, which comes after all its messages (one port keeps
 * their order), so the link is closed with it. A rollout of a reused thread has no MessageChannel
 * of its own: making one, transferring its end and closing it cost the sandbox's main thread
 * ~40-140 µs a rollout, and as an eval starts that thread hands out hundreds of them.
 *
 * A task goes to the least busy thread with room (`perThread` at most), or to a new thread while
 * there are fewer than `max`; otherwise it waits for room. A thread that exits ends the tasks it
 * was running (they say why), and the next task that needs a thread starts one.
 *
 * Why not piscina, which ran these before: its `require` cost the sandbox process 25–35 ms as it
 * started, before it could start any thread, and its balancer had to be worked around (it never
 * puts a second task on a worker running an abortable one); it also left the worker's parent port
 * open to the agents as its own channel.
 */
import { MessageChannel, type MessagePort, type Worker } from 'node:worker_threads';
import { BRAND, type HostMessage, type WorkerTask } from '../protocol.js';
import type { RelayLink } from './ends.js';
import { destroyedExit, exitOf, newWorker, waitForRoom, type FreshExit } from './fresh.js';

export interface ReusedWorkersOptions {
  /** The script every worker runs. */
  filename: string;
  /** Threads started ahead by warm(). */
  threads: number;
  /** Most threads alive at once. */
  max: number;
  /** Most tasks one thread runs at once. */
  perThread: number;
  /** The worker's whole `process.env`. */
  env: Readonly<Record<string, string>>;
  /** Node flags of the worker (its permissions). */
  execArgv: readonly string[];
  /** The worker's V8 heap limit (shared by the tasks it runs). */
  memoryMb: number;
}

/** What a reused worker's runtime sends back on its own port when a task has ended. */
export interface ReusedTaskEnd {
  brand: typeof BRAND;
  id: number;
  /** Why the runtime could not run it to its end (the agent broke the runtime, say). */
  error?: string;
}

/** A task as a reused thread takes it: its runtime gives it its port (TaskPort). */
export type ReusedTask = Omit<WorkerTask, 'port'>;

/** Pool → thread, on the thread's own port: a task to run, or a message for a running one. */
export type ToReusedThread = { id: number; task: ReusedTask } | { id: number; to: HostMessage };

/** Thread → pool, on the thread's own port: a message of task `id`'s runtime, or a task's end. */
export type FromReusedThread = { id: number; m: unknown } | ReusedTaskEnd;

/** The first message a reused worker takes on its parent port. */
export interface ReusedWorkerStart {
  brand: typeof BRAND;
  type: 'reuse';
  port: MessagePort;
}

interface Thread {
  worker: Worker;
  /** The pool's end of the thread's own port. */
  port: MessagePort;
  /** Its running tasks, by task id: each one's link, and its settler (which closes the link). */
  tasks: Map<number, { link: RelayLink; settle: (exit: FreshExit) => void }>;
  /** Tasks whose signal terminated the thread. */
  aborted: Set<number>;
  gone: boolean;
}

export class ReusedWorkers {
  readonly #options: ReusedWorkersOptions;
  readonly #threads: Thread[] = [];
  /** Tasks waiting for room. */
  readonly #waiting: Array<() => void> = [];
  #nextId = 1;
  #destroyed = false;

  constructor(options: ReusedWorkersOptions) {
    this.#options = options;
  }

  /** Starts the threads to start ahead (`threads`). */
  warm(): void {
    try {
      while (!this.#destroyed && this.#threads.length < Math.min(this.#options.threads, this.#options.max)) this.#start();
    } catch {
      // (a worker that cannot even be constructed) the task that needs one says why
    }
  }

  /**
   * Runs `task` on a thread with room, its messages and the host's on `link`; resolves when the
   * task has ended in its thread, or the thread has (`link` is closed then). Aborting `signal`
   * terminates the thread, which ends the other tasks running in it too (trusted agents only share
   * a thread).
   */
  async run(task: ReusedTask, link: RelayLink, signal: AbortSignal): Promise<FreshExit> {
    let thread: Thread | undefined;
    for (;;) {
      if (this.#destroyed) return destroyedExit();
      if (signal.aborted) return { kind: 'terminated', message: 'the task was aborted while it waited for a thread' };
      try {
        thread = this.#pick();
      } catch (err) {
        return { kind: 'exited', message: `the worker could not start: ${err instanceof Error ? err.message : String(err)}` };
      }
      if (thread) break;
      // (a task ending or a thread exiting wakes it)
      await waitForRoom(this.#waiting, signal);
    }
    const id = this.#nextId++;
    const running = thread;
    return new Promise<FreshExit>((resolve) => {
      const abort = (): void => {
        running.aborted.add(id);
        void running.worker.terminate();
      };
      const settle = (exit: FreshExit): void => {
        running.tasks.delete(id);
        // Its messages came before its end (or its thread is gone): nothing more is on its way.
        link.close();
        signal.removeEventListener('abort', abort);
        if (running.tasks.size === 0) running.worker.unref();
        resolve(exit);
        this.#wake();
      };
      running.tasks.set(id, { link, settle });
      // Held while it runs a task (an idle thread does not keep the process alive).
      running.worker.ref();
      signal.addEventListener('abort', abort, { once: true });
      try {
        running.port.postMessage({ id, task } satisfies ToReusedThread);
      } catch (err) {
        // (a task structured clone refuses) the thread never hears of it
        settle({ kind: 'exited', message: `the task could not be posted to its worker: ${err instanceof Error ? err.message : String(err)}` });
        return;
      }
      // The host's messages for it, after it on the port (those sent meanwhile were held).
      link.connect((to) => {
        try {
          running.port.postMessage({ id, to } satisfies ToReusedThread);
        } catch {
          // (a message structured clone refuses) dropped, as a port of its own would have
        }
      });
    });
  }

  /** Ends every thread; tasks running or waiting end too. */
  async destroy(): Promise<void> {
    this.#destroyed = true;
    for (const wake of this.#waiting.splice(0)) wake();
    const threads = this.#threads.splice(0);
    await Promise.all(
      threads.map(async (thread) => {
        const exit = destroyedExit();
        for (const { settle } of [...thread.tasks.values()]) settle(exit);
        await thread.worker.terminate();
      }),
    );
  }

  /** The least busy thread with room, a new one while there may be more, or none. */
  #pick(): Thread | undefined {
    // The threads to start ahead first, as the pool would have if warmed: tasks spread over them.
    this.warm();
    let best: Thread | undefined;
    for (const thread of this.#threads) {
      if (thread.tasks.size < this.#options.perThread && (!best || thread.tasks.size < best.tasks.size)) best = thread;
      if (best?.tasks.size === 0) break;
    }
    if (best) return best;
    return this.#threads.length < this.#options.max ? this.#start() : undefined;
  }

  #start(): Thread {
    const worker = newWorker(this.#options);
    worker.unref();
    const { port1, port2 } = new MessageChannel();
    const start: ReusedWorkerStart = { brand: BRAND, type: 'reuse', port: port2 };
    worker.postMessage(start, [port2]);
    const thread: Thread = { worker, port: port1, tasks: new Map(), aborted: new Set(), gone: false };
    port1.on('message', (msg: FromReusedThread) => {
      if (typeof msg !== 'object' || msg === null || typeof msg.id !== 'number') return;
      if ('m' in msg) return thread.tasks.get(msg.id)?.link.deliver(msg.m);
      if (msg.brand !== BRAND) return;
      thread.tasks.get(msg.id)?.settle(msg.error === undefined ? { kind: 'exited', message: 'the worker finished its task' } : { kind: 'exited', message: msg.error });
    });
    // The port alone must not keep the process alive: the worker's ref does, while it has tasks.
    port1.unref();
    let error: unknown;
    worker.on('error', (err) => (error ??= err));
    worker.once('exit', (code) => {
      thread.gone = true;
      port1.close();
      const at = this.#threads.indexOf(thread);
      if (at >= 0) this.#threads.splice(at, 1);
      for (const [id, { settle }] of [...thread.tasks]) settle(this.#exitOf(thread, id, code, error));
      // Room for a whole thread: every waiting task looks again.
      for (const wake of this.#waiting.splice(0)) wake();
    });
    this.#threads.push(thread);
    return thread;
  }

  /** How a task of `thread` ended, the thread having exited with `code` (after `error`, if any). */
  #exitOf(thread: Thread, id: number, code: number, error: unknown): FreshExit {
    const exit = exitOf(code, error, thread.aborted.has(id));
    if (exit.kind !== 'exited' || error !== undefined) return exit;
    // Ended with its thread, which another task's signal terminated: say so.
    if (thread.aborted.size > 0 && !thread.aborted.has(id)) return { kind: 'exited', message: 'its thread was terminated: another rollout running in it ignored its signal' };
    // A reused thread that exits has not finished its tasks, whatever its code.
    return { kind: 'exited', message: `its thread exited (code ${code}) while the task ran` };
  }

  /** Wakes one task waiting for room. */
  #wake(): void {
    this.#waiting.shift()?.();
  }
}
