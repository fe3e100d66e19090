/**
 * One rollout's use of the gateway: a random token, valid from when the gateway opens the session
 * (just before the agent starts) until it is closed (the agent's part is over), that the agent
 * holds instead of a key; the providers it was granted; its budget of model requests and tokens;
 * and the requests it has in flight, which closing the session aborts (and waits to record).
 */
import { randomBytes } from 'node:crypto';
import type { ModelLog } from './record.js';
import type { Provider } from './providers.js';
import { plural } from '../eval/reporters.js';

/** A rollout's model budget (run.json `limits`). */
export interface ModelLimits {
  /** Model requests the agent may make. */
  maxModelRequests: number;
  /** Input + output tokens; once reached, further requests are refused. None when absent. */
  maxTokens?: number | undefined;
}

/** Why a request was refused: the HTTP status and the JSON error sent back. */
export interface Refusal {
  status: 401 | 403;
  type: 'invalid_token' | 'limit_exceeded' | 'provider_not_granted';
  message: string;
  limit?: string;
}

/** What opens a session. */
export interface SessionOptions {
  providers: readonly Provider[];
  limits: ModelLimits;
  /** Where the session's model calls are recorded. */
  log: ModelLog;
  /** For the cache key. */
  taskId: string | null;
  trial: number | null;
}

/** A token an agent cannot guess: 32 random bytes. */
export function newToken(): string {
  return `silo-${randomBytes(32).toString('base64url')}`;
}

export class ModelSession {
  readonly token = newToken();
  readonly providers: ReadonlySet<Provider>;
  readonly limits: ModelLimits;
  readonly log: ModelLog;
  readonly taskId: string | null;
  readonly trial: number | null;
  /** Requests refused by a limit (the first is in the trace; all are counted in run.json). */
  refused = 0;

  #admitted = 0;
  /** The limit that fired (this session's budget, or another limit of the rollout). */
  #stopped: { limit: string; reason: string; own: boolean } | null = null;
  #closed = false;
  #onLimit: ((limit: string, reason: string) => void) | null = null;
  readonly #occurrences = new Map<string, number>();
  readonly #inFlight = new Map<AbortController, Promise<unknown>>();
  readonly #onClose: () => void;

  constructor(options: SessionOptions, onClose: () => void) {
    this.providers = new Set(options.providers);
    this.limits = options.limits;
    this.log = options.log;
    this.taskId = options.taskId;
    this.trial = options.trial;
    this.#onClose = onClose;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Requests let through so far. */
  get admitted(): number {
    return this.#admitted;
  }

  /** Called once when one of this session's limits fires (the rollout then ends as `model_limit`). */
  onLimit(listener: (limit: string, reason: string) => void): void {
    this.#onLimit = listener;
  }

  /** Another limit of the rollout fired (a timeout, a cancel): no new request is let through. */
  stop(limit: string, reason: string): void {
    this.#stopped ??= { limit, reason, own: false };
  }

  /**
   * The budget check of a request of `provider`: null when it may go on (it is then counted), or
   * why not. The request that would go past maxModelRequests, or any request once the tokens
   * reached maxTokens, is refused and fires the limit.
   */
  admit(provider: Provider): Refusal | null {
    if (this.#closed) return { status: 401, type: 'invalid_token', message: "this token's rollout has ended" };
    if (!this.providers.has(provider)) {
      return { status: 403, type: 'provider_not_granted', message: `this rollout was not granted ${provider} (grant it with --provider ${provider})` };
    }
    if (!this.#stopped) {
      const { maxModelRequests, maxTokens } = this.limits;
      const usage = this.log.usage('agent');
      const tokens = (usage?.inputTokens ?? 0) + (usage?.outputTokens ?? 0);
      if (this.#admitted >= maxModelRequests) {
        this.#fire('maxModelRequests', `model request limit: the agent made more than ${plural(maxModelRequests, 'model request')} (maxModelRequests)`);
      } else if (maxTokens !== undefined && tokens >= maxTokens) {
        this.#fire('maxTokens', `token limit: the agent's model requests used ${tokens} tokens, reaching maxTokens (${maxTokens})`);
      }
    }
    if (this.#stopped) {
      this.refused++;
      return { status: 403, type: 'limit_exceeded', message: `model request refused: ${this.#stopped.reason}`, limit: this.#stopped.limit };
    }
    this.#admitted++;
    return null;
  }

  /** How many times this request (by its identity) was made before in this rollout. */
  occurrence(identity: string): number {
    const n = this.#occurrences.get(identity) ?? 0;
    this.#occurrences.set(identity, n + 1);
    return n;
  }

  /** Follows a request in flight: closing the session aborts it and waits for it to be recorded. */
  track<T>(controller: AbortController, work: Promise<T>): Promise<T> {
    const settled = work.finally(() => this.#inFlight.delete(controller));
    this.#inFlight.set(controller, settled.catch(() => {}));
    return settled;
  }

  /** Ends the session: the token stops working, requests in flight are aborted and recorded. */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      this.#onClose();
    }
    for (const controller of this.#inFlight.keys()) controller.abort(new Error("the rollout's agent phase ended"));
    await Promise.all(this.#inFlight.values());
  }

  #fire(limit: string, reason: string): void {
    this.#stopped = { limit, reason, own: true };
    this.#onLimit?.(limit, reason);
  }
}
