/**
 * Messages between the host and its sandbox process, on the sealed link (link.ts). One rollout is
 * one `id`: the host relays its port through `to`/`from` (which travel as frames of their own
 * kinds: a worker's JSON text as UTF-8, a message to a worker in V8's serialization).
 */
import type { WorkerExit } from '../pool/pool.js';
import type { WorkerTask } from '../protocol.js';
import type { NetMessage } from './relay.js';

/** What the host asks of the sandbox. */
export type ToSandbox =
  | {
      t: 'run';
      id: number;
      task: Omit<WorkerTask, 'brand' | 'port' | 'exitAfter'>;
      memoryMb: number;
      env: Record<string, string>;
      readable: string[];
      /** The gateway port to relay into the sandbox's network namespace before the agent starts (`--no-network`). */
      relay?: number;
    }
  /** A message for the rollout's worker (a tool result, an abort). */
  | { t: 'to'; id: number; m: unknown }
  /** The grace period is over: terminate the rollout's worker. */
  | { t: 'terminate'; id: number }
  /**
   * Sent every second while rollouts run: a frame an agent took is missed at the next one, and a
   * sandbox that stops answering (its link blocked or read by an agent) is ended.
   */
  | { t: 'ping' }
  /**
   * Start the workers of the rollouts to come now (AgentPool.warm): those of a heap of `memoryMb`,
   * with `env` as their environment and read access to `readable`.
   */
  | { t: 'warm'; memoryMb: number; env: Record<string, string>; readable: string[] }
  /** A relayed connection to the model gateway (relay.ts). */
  | NetMessage;

/** What the sandbox tells the host. */
export type FromSandbox =
  | { t: 'ready' }
  /** The answer to a ping: the link still carries frames both ways. */
  | { t: 'pong' }
  /** A message from the rollout's worker (JSON text), in the order it was sent. */
  | { t: 'from'; id: number; m: unknown }
  /** The rollout's worker is gone; every `from` of it came before. */
  | { t: 'exit'; id: number; exit: WorkerExit }
  /** A relayed connection to the model gateway (relay.ts). */
  | NetMessage;

/** Options the sandbox's own worker pool is made with (its first argument, as JSON). */
export interface SandboxPoolOptions {
  maxThreads?: number;
  /** Workers the sandbox keeps warm (AgentPoolOptions.minThreads). */
  minThreads?: number;
  reuse?: boolean;
}
