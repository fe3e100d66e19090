/**
 * Model calls Silo makes itself, on the host, for an actor that is not the agent (a simulated
 * user): the same upstream (its keys, its cap on requests in flight, its retries), the same cache
 * (keyed with the actor too) and the same recording (a `model_call` event with `actor`, a line of
 * models.jsonl, a usage total of the actor's own), without a token or an HTTP hop.
 */
import { performance } from 'node:perf_hooks';
import type { Actor } from './cache.js';
import { exchange, type Sink } from './exchange.js';
import type { Gateway } from './gateway.js';
import type { ModelCall, ModelLog } from './record.js';
import { route, PROVIDER_SPECS, type Provider } from './providers.js';

/** The answer to a host-side model call. */
export interface HostModelAnswer {
  /** The HTTP status (null when no answer came: every try lost its connection, or it was aborted). */
  status: number | null;
  /** The parsed JSON answer (null when it is not JSON or none came). */
  body: unknown;
  /** The call as recorded (usage, cached, retries, queuedMs, error). */
  call: ModelCall;
}

/** Where a host-side actor's calls are recorded and keyed. */
export interface HostModelScope {
  actor: Exclude<Actor, 'agent'>;
  /** The run's model log: its trace events and models.jsonl. */
  log: ModelLog;
  taskId: string | null;
  trial: number | null;
}

/** Makes a rollout's host-side model calls through a gateway's upstream, cache and recording. */
export class HostModelClient {
  readonly #gateway: Gateway;
  readonly #scope: HostModelScope;
  readonly #occurrences = new Map<string, number>();

  constructor(gateway: Gateway, scope: HostModelScope) {
    this.#gateway = gateway;
    this.#scope = scope;
  }

  /**
   * POSTs `body` (not streamed: `stream` is removed) to `endpoint` of `provider`: `chat/completions`
   * or `responses` (OpenAI), `messages` (Anthropic). Never rejects for the provider's failures:
   * they come back as a status and an error on the call.
   */
  async request(provider: Provider, endpoint: 'chat/completions' | 'responses' | 'messages', body: Record<string, unknown>, signal?: AbortSignal): Promise<HostModelAnswer> {
    const path = `${PROVIDER_SPECS[provider].prefix}${endpoint === 'messages' ? '/v1/messages' : `/${endpoint}`}`;
    const routed = route('POST', path);
    if (!routed || routed.provider !== provider) throw new Error(`${provider} has no endpoint ${endpoint}`);
    const { stream: _stream, ...json } = body;
    const raw = Buffer.from(JSON.stringify(json));
    const chunks: Buffer[] = [];
    let status: number | null = null;
    const sink: Sink = {
      head: (s) => void (status = s),
      write: (chunk) => void chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : chunk),
      end: (last) => void (last !== undefined && chunks.push(typeof last === 'string' ? Buffer.from(last) : last)),
      abort: () => {},
      gone: false,
    };
    const controller = new AbortController();
    const onAbort = (): void => controller.abort(signal?.reason);
    if (signal?.aborted) onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      const call = await exchange(
        {
          upstream: this.#gateway.upstream,
          cache: this.#gateway.cache,
          log: this.#scope.log,
          taskId: this.#scope.taskId,
          trial: this.#scope.trial,
          occurrence: (identity) => {
            const n = this.#occurrences.get(identity) ?? 0;
            this.#occurrences.set(identity, n + 1);
            return n;
          },
          maxResponseBytes: Number.MAX_SAFE_INTEGER,
        },
        {
          actor: this.#scope.actor,
          routed,
          raw,
          json,
          headers: { 'content-type': 'application/json', ...(provider === 'anthropic' ? { 'anthropic-version': '2023-06-01' } : {}) },
          signal: controller.signal,
          startedAt: performance.now(),
        },
        sink,
      );
      let parsed: unknown = null;
      try {
        parsed = chunks.length > 0 ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as unknown) : null;
      } catch {
        // not JSON
      }
      return { status: call.status ?? status, body: parsed, call };
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
  }
}
