/**
 * The seam between an eval and where its rollouts run. The eval owns scheduling, retries,
 * statistics and the store; a runner only turns one attempt at one (task, trial) into results.
 * The local runner runs the rollout on this machine's pool; the queue coordinator
 * (src/queue/coordinator.ts) enqueues it for workers and writes back the artifacts they return.
 */
import type { LoadedTask } from '../load.js';
import { resolve } from 'node:path';
import { parseBuiltinAgent } from '../agents/builtin.js';
import { DEFAULT_LIMITS } from '../options.js';
import { COMPILE_FOR_ROLLOUTS, PreparedAgents } from '../pool/compile.js';
import type { AgentRunner } from '../pool/pool.js';
import { runRollout } from '../rollout/rollout.js';
import type { EvalOptionsRecord, RunResult } from '../types.js';
import type { Gateway } from '../gateway/gateway.js';
import { checkModelAccess } from '../gateway/shared.js';

/** One attempt at one (task, trial). */
export interface RolloutRequest {
  loaded: LoadedTask;
  /** 0-based trial. */
  trial: number;
  /** 0-based attempt of this pair (infrastructure retries make more); unique per pair across resumes. */
  attempt: number;
}

/** Where an eval's rollouts run. */
export interface RolloutRunner {
  /** How many pairs may be under way at once. */
  readonly slots: number;
  /**
   * Runs one attempt. Resolves to the runs it produced, oldest first: the last is the attempt's
   * result; any before it were lost to infrastructure on the way (a queue worker that died) and
   * count as retries. An empty list: the pair was withdrawn before it ran (cancel).
   */
  run(request: RolloutRequest): Promise<RunResult[]>;
  /** The eval stopped scheduling (cancel or a fault): withdraw what has not started. */
  withdraw(): Promise<void>;
  /** Frees the runner's resources; `finished` says every pair of the eval has its run. */
  close(finished: boolean): Promise<void>;
}

/** What a runner is made from. */
export interface RunnerContext {
  evalId: string;
  record: EvalOptionsRecord;
  /** Absolute artifact folder. */
  outDir: string;
  /** The eval's cancel signal. */
  signal?: AbortSignal;
  /** The agent's environment (`--env`); the record keeps only the names. */
  env?: Record<string, string>;
  /** Rollouts at once, when the user asked for a number. */
  concurrency?: number;
  /** The eval's model gateway, when its agent reaches a model through one (the eval closes it). */
  gateway?: Gateway;
  /** Rollouts left to run; with none (a finished eval resumed), nothing is started ahead. */
  rollouts?: number;
}

/**
 * Makes the runner of an eval. It is called before anything of the eval is written, so a runner
 * that cannot start (say its queue is unreachable) leaves no half-written eval behind.
 */
export type RunnerFactory = (context: RunnerContext) => Promise<RolloutRunner>;

/**
 * Runs each rollout on `pool`, in this process. `early`: agents prepared already, as for an eval
 * of `rollouts` rollouts (by `silo eval` as its sandbox started early: run-early.ts), taken unless
 * this eval's size calls for preparing them otherwise (an ES module agent is compiled for
 * COMPILE_FOR_ROLLOUTS rollouts or more); else they are prepared here for `context.rollouts`.
 */
export function localRunner(context: RunnerContext, pool: AgentRunner, slots: number, early?: { prepared: PreparedAgents; rollouts: number }): RolloutRunner {
  const { record, outDir, evalId, signal, env, gateway } = context;
  const rollouts = context.rollouts ?? 0;
  if (gateway) checkModelAccess(gateway, record.agent, record.providers ?? [], record.user);
  const preparedAgents =
    early && rollouts >= COMPILE_FOR_ROLLOUTS === early.rollouts >= COMPILE_FOR_ROLLOUTS ? early.prepared : new PreparedAgents({ rollouts });
  // The agent's sandbox (a jail's mounts depend on the agent) and its first workers start now,
  // while the eval gets its first rollouts ready.
  // (Not for an eval with nothing left to run: threads still starting when the pool is destroyed
  // would only be waited for.)
  if (!parseBuiltinAgent(record.agent) && context.rollouts !== 0) {
    const worker = { memoryMb: record.limits?.memoryMb ?? DEFAULT_LIMITS.memoryMb, env: { ...env } };
    preparedAgents.get(resolve(record.agent), { reused: pool.reusesWorkers === true }).then(
      (prepared) => pool.warm?.(prepared.readable, worker),
      () => {},
    );
  }
  const cancels = new Cancels(signal);
  return {
    slots,
    async run({ loaded, trial }) {
      const cancel = cancels.open();
      try {
        return [await runOne(loaded, trial, cancel?.signal)];
      } finally {
        cancels.close(cancel);
      }
    },
    // Slots stop taking pairs and the signal aborts running rollouts: nothing is queued here.
    withdraw: () => Promise.resolve(),
    close: () => pool.destroy(),
  };

  function runOne(loaded: LoadedTask, trial: number, signal: AbortSignal | undefined): Promise<RunResult> {
    return runRollout({
      task: loaded.task,
      taskFile: loaded.file,
      agent: record.agent,
      limits: record.limits,
      ...(env ? { env } : {}),
      ...(record.agentOptions ? { agentOptions: record.agentOptions } : {}),
      ...(record.strict ? { strict: true } : {}),
      ...(record.providers ? { providers: record.providers } : {}),
      ...(record.user === undefined ? {} : { user: record.user }),
      ...(record.solo ? { solo: true } : {}),
      ...(gateway ? { gateway } : {}),
      outDir,
      pool,
      preparedAgents,
      evalId,
      trial,
      ...(signal ? { signal } : {}),
    });
  }
}

/**
 * The eval's cancel, handed to each running rollout as a signal of its own, with one listener on
 * the eval's signal for them all. An AbortSignal keeps its listeners in a list that each
 * addEventListener and removeEventListener walks: 256 rollouts listening to the eval's signal
 * themselves cost time quadratic in their number, at every start and every end.
 */
class Cancels {
  readonly #signal: AbortSignal | undefined;
  readonly #open = new Set<AbortController>();

  constructor(signal: AbortSignal | undefined) {
    this.#signal = signal;
    signal?.addEventListener('abort', () => {
      for (const cancel of this.#open) cancel.abort(signal.reason);
    }, { once: true });
  }

  /** A rollout's cancel (aborted already if the eval's is); none without an eval signal. */
  open(): AbortController | undefined {
    if (!this.#signal) return undefined;
    const cancel = new AbortController();
    if (this.#signal.aborted) cancel.abort(this.#signal.reason);
    else this.#open.add(cancel);
    return cancel;
  }

  close(cancel: AbortController | undefined): void {
    if (cancel) this.#open.delete(cancel);
  }
}
