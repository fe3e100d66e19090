/**
 * The host's client of the model providers: every request the gateway forwards (and, later, the
 * model calls Silo makes itself on the host) goes through here. Requests in flight are capped per
 * provider across every rollout that shares this client, so an eval of 256 rollouts does not
 * stampede a provider; a 408, 429 or 5xx answer, or a connection lost before an answer, is tried
 * again with exponential backoff, honouring the wait the provider asks for (`retry-after-ms`,
 * `retry-after`). The time spent waiting for a slot and between tries is `queuedMs`.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingHttpHeaders, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { performance } from 'node:perf_hooks';
import { describeError } from '../errors.js';
import { Limiter } from './limiter.js';
import { PROVIDER_SPECS, PROVIDERS, type Provider, type UpstreamConfig } from './providers.js';

/** How requests go upstream. */
export interface UpstreamOptions {
  /** Requests in flight per provider, at most. Default 16. */
  concurrency?: number;
  /** Tries after the first. Default 4. */
  retries?: number;
  /** The first backoff, ms; it doubles each try (with ±25% jitter). Default 500. */
  backoffMs?: number;
  /** No wait between tries is longer, whatever the provider asks for, ms. Default 30 000. */
  maxWaitMs?: number;
  /**
   * Told once per provider, at its first request, when the host has no key for it (a local server
   * may need none). Default: a line on stderr, once per process.
   */
  warn?: (message: string) => void;
}

export const DEFAULT_MODEL_CONCURRENCY = 16;
const DEFAULT_RETRIES = 4;
const DEFAULT_BACKOFF_MS = 500;
const DEFAULT_MAX_WAIT_MS = 30_000;

/** What was said on stderr already by any upstream of this process (UpstreamOptions.warn): each thing once. */
const said = new Set<string>();

/** One request upstream. */
export interface UpstreamRequest {
  provider: Provider;
  method: 'GET' | 'POST';
  /** The path after the upstream's base URL (`/chat/completions`). */
  path: string;
  /** Headers to send besides the key (the caller chose them; never the agent's credentials). */
  headers: Record<string, string>;
  body: Buffer | null;
  /** Aborts the request: the wait for a slot, a backoff, or the response. */
  signal: AbortSignal;
}

/** An answer from upstream; its body must be read to the end or destroyed (that frees the slot). */
export interface UpstreamResponse {
  status: number;
  headers: IncomingHttpHeaders;
  body: IncomingMessage;
  /** Time spent waiting for a slot and between tries, ms. */
  queuedMs: number;
  /** Tries after the first. */
  retries: number;
}

/** No answer came (every try lost its connection, or the request was aborted). */
export class UpstreamError extends Error {
  readonly aborted: boolean;
  readonly queuedMs: number;
  readonly retries: number;
  constructor(message: string, details: { aborted: boolean; queuedMs: number; retries: number }) {
    super(message);
    this.name = 'UpstreamError';
    this.aborted = details.aborted;
    this.queuedMs = details.queuedMs;
    this.retries = details.retries;
  }
}

/** Answers worth another try: the provider is busy or failed, not the request. */
export function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

/** The client of the providers' upstreams. */
export class Upstream {
  readonly #configs: Record<Provider, UpstreamConfig>;
  readonly #limiters: Record<Provider, Limiter>;
  readonly #agents: Record<Provider, HttpAgent>;
  /** Each upstream's base URL, parsed once. */
  readonly #bases: Record<Provider, { https: boolean; hostname: string; port: string; path: string }>;
  readonly #retries: number;
  readonly #backoffMs: number;
  readonly #maxWaitMs: number;
  readonly #warn: (message: string) => void;
  /** Providers whose missing key was told (UpstreamOptions.warn). */
  readonly #toldKey = new Set<Provider>();

  constructor(configs: Record<Provider, UpstreamConfig>, options: UpstreamOptions = {}) {
    const concurrency = options.concurrency ?? DEFAULT_MODEL_CONCURRENCY;
    this.#configs = configs;
    this.#retries = options.retries ?? DEFAULT_RETRIES;
    this.#backoffMs = options.backoffMs ?? DEFAULT_BACKOFF_MS;
    this.#maxWaitMs = options.maxWaitMs ?? DEFAULT_MAX_WAIT_MS;
    this.#warn =
      options.warn ??
      ((message) => {
        if (said.has(message)) return;
        said.add(message);
        process.stderr.write(`silo: ${message}\n`);
      });
    this.#limiters = {} as Record<Provider, Limiter>;
    this.#agents = {} as Record<Provider, HttpAgent>;
    this.#bases = {} as Record<Provider, { https: boolean; hostname: string; port: string; path: string }>;
    for (const provider of PROVIDERS) {
      const base = new URL(configs[provider].baseUrl);
      this.#bases[provider] = { https: base.protocol === 'https:', hostname: base.hostname.replace(/^\[|\]$/g, ''), port: base.port, path: base.pathname.replace(/\/+$/, '') };
      this.#limiters[provider] = new Limiter(concurrency);
      const https = configs[provider].baseUrl.startsWith('https:');
      // Kept-alive connections, one per request in flight at most.
      this.#agents[provider] = https ? new HttpsAgent({ keepAlive: true, maxSockets: concurrency }) : new HttpAgent({ keepAlive: true, maxSockets: concurrency });
    }
  }

  /** Where a provider's requests go. */
  config(provider: Provider): UpstreamConfig {
    return this.#configs[provider];
  }

  /** Requests of `provider` in flight upstream now, and waiting for a slot. */
  load(provider: Provider): { inFlight: number; waiting: number } {
    const limiter = this.#limiters[provider];
    return { inFlight: limiter.inFlight, waiting: limiter.waiting };
  }

  /**
   * Sends `req`, trying again after a transient failure; resolves with the last answer (a failed
   * one too, once the tries are spent). Rejects with UpstreamError when no answer came.
   */
  /** Says once (UpstreamOptions.warn) that the host has no key for `provider`, if it has none. */
  checkKey(provider: Provider): void {
    if (this.#configs[provider].apiKey || this.#toldKey.has(provider)) return;
    this.#toldKey.add(provider);
    const { env } = PROVIDER_SPECS[provider];
    this.#warn(`${env.apiKey} is not set here, so ${provider} requests go to ${this.#configs[provider].baseUrl} without a key (a local server may need none; otherwise set ${env.apiKey} in this shell)`);
  }

  async send(req: UpstreamRequest): Promise<UpstreamResponse> {
    this.checkKey(req.provider);
    let queuedMs = 0;
    for (let attempt = 0; ; attempt++) {
      const waitStart = performance.now();
      let release: () => void;
      try {
        release = await this.#limiters[req.provider].acquire(req.signal);
      } catch {
        throw new UpstreamError('the request was aborted while it waited for a slot', { aborted: true, queuedMs: queuedMs + (performance.now() - waitStart), retries: attempt });
      }
      queuedMs += performance.now() - waitStart;
      let response: IncomingMessage;
      try {
        response = await this.#once(req);
      } catch (err) {
        release();
        if (req.signal.aborted) throw new UpstreamError('the request was aborted', { aborted: true, queuedMs, retries: attempt });
        if (attempt >= this.#retries) {
          throw new UpstreamError(`no answer from the ${req.provider} upstream at ${this.#configs[req.provider].baseUrl} (${describeError(err)}) after ${attempt + 1} ${attempt === 0 ? 'try' : 'tries'}`, { aborted: false, queuedMs, retries: attempt });
        }
        queuedMs += await this.#backoff(attempt, undefined, req.signal, queuedMs);
        continue;
      }
      const status = response.statusCode ?? 502;
      if (isRetryableStatus(status) && attempt < this.#retries && !req.signal.aborted) {
        // The answer is dropped; its connection goes back to the pool once read.
        response.resume();
        response.once('error', () => {});
        release();
        queuedMs += await this.#backoff(attempt, response.headers, req.signal, queuedMs);
        continue;
      }
      let freed = false;
      const free = (): void => {
        if (freed) return;
        freed = true;
        release();
      };
      response.once('end', free);
      response.once('close', free);
      response.once('error', free);
      return { status, headers: response.headers, body: response, queuedMs, retries: attempt };
    }
  }

  /** Frees the kept-alive connections. */
  close(): void {
    for (const agent of Object.values(this.#agents)) agent.destroy();
  }

  /** One try: resolves with the answer's head, rejects when the connection fails. */
  #once(req: UpstreamRequest): Promise<IncomingMessage> {
    const config = this.#configs[req.provider];
    const base = this.#bases[req.provider];
    const headers: Record<string, string> = {
      ...req.headers,
      // Plain bytes: the gateway reads usage off them as they pass.
      'accept-encoding': 'identity',
      ...(config.apiKey ? PROVIDER_SPECS[req.provider].auth(config.apiKey) : {}),
    };
    if (req.body) headers['content-length'] = String(req.body.length);
    const send = base.https ? httpsRequest : httpRequest;
    const target = { hostname: base.hostname, ...(base.port ? { port: base.port } : {}), path: `${base.path}${req.path}` };
    return new Promise<IncomingMessage>((resolve, reject) => {
      const r = send({ ...target, method: req.method, headers, agent: this.#agents[req.provider], signal: req.signal }, resolve);
      r.once('error', reject);
      r.end(req.body ?? undefined);
    });
  }

  /** Waits before another try; resolves with the time waited, ms. */
  async #backoff(attempt: number, headers: IncomingHttpHeaders | undefined, signal: AbortSignal, queuedMs: number): Promise<number> {
    const asked = headers ? retryAfterMs(headers) : undefined;
    const waitMs = Math.min(this.#maxWaitMs, asked ?? this.#backoffMs * 2 ** attempt * (0.75 + Math.random() * 0.5));
    const start = performance.now();
    try {
      await sleep(waitMs, signal);
    } catch {
      throw new UpstreamError('the request was aborted while it waited to try again', { aborted: true, queuedMs: queuedMs + (performance.now() - start), retries: attempt + 1 });
    }
    return performance.now() - start;
  }
}

/** The wait a provider asks for: `retry-after-ms`, or `retry-after` in seconds or as a date. */
export function retryAfterMs(headers: IncomingHttpHeaders): number | undefined {
  const ms = Number(headers['retry-after-ms'] ?? Number.NaN);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const after = headers['retry-after'];
  if (typeof after !== 'string' || after.trim() === '') return undefined;
  const seconds = Number(after);
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = Date.parse(after);
  return Number.isFinite(date) ? Math.max(0, date - Date.now()) : undefined;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new Error('aborted'));
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new Error('aborted'));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
