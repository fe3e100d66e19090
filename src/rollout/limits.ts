/**
 * The limits of one rollout while the agent runs: the wall clock, the tool-call budget and
 * cancellation. The first limit to fire decides the termination; after it, every call is
 * refused without running.
 */
import type { Limits, Termination, ToolResult } from '../types.js';
import { plural } from '../eval/reporters.js';

export interface FiredLimit {
  termination: Extract<Termination, 'timeout' | 'tool_call_limit' | 'model_limit' | 'cancelled'>;
  /** The limit's name as in run.json `limits` (or `cancel`). */
  limit: string;
  reason: string;
}

export class LimitGuard {
  /** Calls that went past the limit check. */
  toolCalls = 0;
  /** Calls refused by a limit or after the signal. */
  refusedCalls = 0;
  fired: FiredLimit | null = null;

  readonly #limits: Limits;
  readonly #onFire: (fired: FiredLimit) => void;
  #timer: NodeJS.Timeout | undefined;

  constructor(limits: Limits, onFire: (fired: FiredLimit) => void) {
    this.#limits = limits;
    this.#onFire = onFire;
  }

  /** Starts the wall clock (when the agent's worker has taken the rollout). */
  startClock(): void {
    if (this.#timer || this.fired) return;
    const { timeoutMs } = this.#limits;
    this.#timer = setTimeout(
      () => this.fire({ termination: 'timeout', limit: 'timeoutMs', reason: `timeout: the agent ran for ${timeoutMs} ms (timeoutMs)` }),
      timeoutMs,
    );
  }

  /**
   * The abort/limit check of the tool-call path: a refusal, or null when the call may go on.
   * `oversized` (an input over maxMessageBytes) refuses this one call; the run goes on.
   */
  admit(oversized?: { bytes: number }): ToolResult | null {
    if (this.fired) {
      this.refusedCalls++;
      const code = this.fired.termination === 'tool_call_limit' ? 'limit_exceeded' : 'aborted';
      return { ok: false, error: { code, message: `call refused: ${this.fired.reason}`, limit: this.fired.limit } };
    }
    if (oversized) {
      this.refusedCalls++;
      const message = `call refused: its input is about ${oversized.bytes} bytes, over maxMessageBytes (${this.#limits.maxMessageBytes})`;
      return { ok: false, error: { code: 'limit_exceeded', message, limit: 'maxMessageBytes' } };
    }
    if (this.toolCalls >= this.#limits.maxToolCalls) {
      this.refusedCalls++;
      const reason = `tool call limit: the agent made more than ${plural(this.#limits.maxToolCalls, 'call')} (maxToolCalls)`;
      this.fire({ termination: 'tool_call_limit', limit: 'maxToolCalls', reason });
      return { ok: false, error: { code: 'limit_exceeded', message: `call refused: ${reason}`, limit: 'maxToolCalls' } };
    }
    this.toolCalls++;
    return null;
  }

  /** Fires a limit (the first one wins). */
  fire(fired: FiredLimit): void {
    if (this.fired) return;
    this.fired = fired;
    this.stop();
    this.#onFire(fired);
  }

  stop(): void {
    clearTimeout(this.#timer);
  }
}
