/**
 * The budget of agent logs one run keeps. Each event costs its characters plus a fixed amount,
 * so neither a few huge lines nor millions of empty ones can fill the host's memory or disk.
 * The worker keeps the same budget (an honest agent stops sending); the host enforces it.
 */
import { LOG_EVENT_COST, LOG_MAX_CHARS_PER_RUN } from '../options.js';

export class LogBudget {
  #used = 0;
  readonly #limit: number;

  constructor(limit = LOG_MAX_CHARS_PER_RUN) {
    this.#limit = limit;
  }

  /** Charges one event of `chars` characters; false once the budget is spent. */
  take(chars: number): boolean {
    if (this.#used > this.#limit) return false;
    this.#used += chars + LOG_EVENT_COST;
    return this.#used <= this.#limit;
  }

  /** True once an event has been refused. */
  get spent(): boolean {
    return this.#used > this.#limit;
  }
}

/** The note written once when the budget runs out. */
export const LOG_BUDGET_NOTE = `silo: the agent's logs passed the per-run budget (${LOG_MAX_CHARS_PER_RUN} characters, ${LOG_EVENT_COST} per event); later logs are dropped`;
