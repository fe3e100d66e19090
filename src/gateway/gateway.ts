/**
 * The model gateway: an HTTP server on 127.0.0.1 in the host through which agents reach their
 * models without ever holding a provider key. Each rollout granted a provider gets a session
 * (session.ts) whose random token the agent uses as its API key; the gateway checks the Host
 * header, the path (only the providers' model endpoints are forwarded), the token and the size of
 * every request, applies the rollout's budget, and forwards what passes to the upstream with the
 * host's key (exchange.ts) — never the agent's own credentials.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { MiB } from '../options.js';
import { ModelCache, type CacheMode } from './cache.js';
import { errorBody, exchange, NO_RETRY, type Sink } from './exchange.js';
import { FORWARDED, agentVariables, route, upstreamsFromEnv, type Provider, type UpstreamConfig } from './providers.js';
import { addGatewayPort, removeGatewayPort } from './ports.js';
import { ModelSession, type SessionOptions } from './session.js';
import { Upstream, type UpstreamOptions } from './upstream.js';

/** Bytes of one request body an agent may send (long contexts and images are large, but not this). */
export const GATEWAY_MAX_REQUEST_BYTES = 32 * MiB;
/** Bytes of one response relayed to an agent. */
export const GATEWAY_MAX_RESPONSE_BYTES = 64 * MiB;
/** How long an idle connection from an agent stays open, ms. */
const GATEWAY_KEEP_ALIVE_MS = 10 * 60_000;

/** Options of a gateway. */
export interface GatewayOptions extends UpstreamOptions {
  /** Each provider's upstream; by default from `env` (OPENAI_BASE_URL / OPENAI_API_KEY ...). */
  upstreams?: Partial<Record<Provider, UpstreamConfig>>;
  /** Where the upstreams are read from when not given. Default: process.env. */
  env?: NodeJS.ProcessEnv;
  /** Store and replay responses (`--model-cache DIR`, `--model-cache-mode`). */
  cache?: ModelCache | { dir: string; mode?: CacheMode };
  maxRequestBytes?: number;
  maxResponseBytes?: number;
}

/** What a rollout gets from the gateway: its session and the variables its agent is given. */
export interface GatewayGrant {
  session: ModelSession;
  /** OPENAI_BASE_URL / OPENAI_API_KEY (and the Anthropic pair) for the granted providers. */
  env: Record<string, string>;
  /** The gateway's port on the host's loopback (a sandbox without network relays it). */
  port: number;
}

/** Request headers passed upstream; credentials never are (the host's key replaces them). */
const FORWARDED_HEADERS = ['content-type', 'accept', 'anthropic-version', 'anthropic-beta', 'openai-beta'];

export class Gateway {
  readonly upstream: Upstream;
  readonly cache: ModelCache | null;
  readonly #maxRequestBytes: number;
  readonly #maxResponseBytes: number;
  readonly #sessions = new Map<string, ModelSession>();
  #server: Server | null = null;
  #port = 0;
  #listening: Promise<number> | null = null;

  constructor(options: GatewayOptions = {}) {
    const upstreams = { ...upstreamsFromEnv(options.env ?? process.env), ...options.upstreams };
    this.upstream = new Upstream(upstreams, options);
    const cache = options.cache;
    this.cache = cache === undefined ? null : cache instanceof ModelCache ? cache : new ModelCache(cache.dir, cache.mode);
    this.#maxRequestBytes = options.maxRequestBytes ?? GATEWAY_MAX_REQUEST_BYTES;
    this.#maxResponseBytes = options.maxResponseBytes ?? GATEWAY_MAX_RESPONSE_BYTES;
  }

  /** http://127.0.0.1:<port> once listening. */
  get origin(): string {
    return `http://127.0.0.1:${this.#port}`;
  }

  get port(): number {
    return this.#port;
  }

  /** Rollouts with a live token. */
  get sessions(): number {
    return this.#sessions.size;
  }

  /** Starts listening on 127.0.0.1 (a free port); resolves with the port. */
  listen(): Promise<number> {
    this.#listening ??= new Promise<number>((resolve, reject) => {
      const server = createServer((req, res) => void this.#handle(req, res));
      // Agents' clients keep connections alive between model calls, some (node:http's Agent) for
      // ever: a server that closes an idle one after the default 5 s races a client reusing it
      // (ECONNRESET). The gateway keeps them (they are local, and do not keep the host running:
      // rollouts in progress do).
      server.keepAliveTimeout = GATEWAY_KEEP_ALIVE_MS;
      server.on('connection', (socket) => socket.unref());
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => {
        server.unref();
        this.#server = server;
        this.#port = (server.address() as AddressInfo).port;
        addGatewayPort(this.#port);
        resolve(this.#port);
      });
    });
    return this.#listening;
  }

  /** Opens a rollout's session: a fresh token, valid until the session is closed. */
  async open(options: SessionOptions): Promise<GatewayGrant> {
    const port = await this.listen();
    const session = new ModelSession(options, () => this.#sessions.delete(session.token));
    this.#sessions.set(session.token, session);
    return { session, env: agentVariables(options.providers, this.origin, session.token), port };
  }

  /** Stops listening, ends every session, frees the upstream connections. */
  async close(): Promise<void> {
    await Promise.all([...this.#sessions.values()].map((s) => s.close()));
    const server = this.#server;
    this.#server = null;
    removeGatewayPort(this.#port);
    this.upstream.close();
    if (server) {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const startedAt = performance.now();
    const refuse = (status: number, type: string, message: string, extra: Record<string, unknown> = {}): void => {
      if (res.headersSent) return void res.destroy();
      res.writeHead(status, { 'content-type': 'application/json', ...NO_RETRY });
      res.end(errorBody(type, `silo gateway: ${message}`, extra));
    };
    try {
      // The Host header names this gateway: a page in a browser that resolves some name to
      // 127.0.0.1 (DNS rebinding) cannot use it.
      const host = req.headers.host;
      if (host !== `127.0.0.1:${this.#port}` && host !== `localhost:${this.#port}`) {
        return refuse(403, 'host_refused', `requests must name 127.0.0.1:${this.#port} as their host (got ${JSON.stringify(host ?? null).slice(0, 80)})`);
      }
      const path = (req.url ?? '').split('?')[0]!;
      const routed = route(req.method ?? '', path);
      if (!routed) return refuse(404, 'not_found', `${req.method} ${path.slice(0, 200)} is not forwarded; the gateway forwards ${FORWARDED}`);
      const session = tokensOf(req).map((t) => this.#sessions.get(t)).find((found) => found !== undefined);
      if (!session) {
        return refuse(401, 'invalid_token', 'no valid token: use the API key Silo gave this rollout (OPENAI_API_KEY / ANTHROPIC_API_KEY); a token ends with its rollout');
      }
      let raw: Buffer | null = null;
      let json: Record<string, unknown> | null = null;
      if (routed.method === 'POST') {
        raw = await readBody(req, this.#maxRequestBytes);
        if (raw === null) {
          res.once('finish', () => req.socket.destroy());
          return refuse(413, 'request_too_large', `the request body is over ${this.#maxRequestBytes} bytes`);
        }
        try {
          const parsed = JSON.parse(raw.toString('utf8')) as unknown;
          if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not an object');
          json = parsed as Record<string, unknown>;
        } catch {
          return refuse(400, 'invalid_request', 'the request body must be a JSON object');
        }
      }
      const refusal = session.admit(routed.provider);
      if (refusal) {
        if (refusal.type === 'limit_exceeded' && session.refused === 1) {
          // The first refusal is in the trace; the rest are counted.
          const call = {
            requestId: session.log.nextRequestId(),
            actor: 'agent' as const,
            provider: routed.provider,
            endpoint: routed.endpoint,
            model: typeof json?.model === 'string' ? json.model : null,
            stream: json?.stream === true,
            status: refusal.status,
            durationMs: 0,
            queuedMs: 0,
            usage: { inputTokens: 0, outputTokens: 0 },
            error: refusal.message,
          };
          session.log.record(call, null, null, true, false);
        }
        return refuse(refusal.status, refusal.type, refusal.message, refusal.limit ? { limit: refusal.limit } : {});
      }

      const headers: Record<string, string> = {};
      for (const name of FORWARDED_HEADERS) {
        const value = req.headers[name];
        if (typeof value === 'string') headers[name] = value;
      }
      if (raw) headers['content-type'] = 'application/json';
      if (routed.provider === 'anthropic') headers['anthropic-version'] ??= '2023-06-01';

      const controller = new AbortController();
      res.once('close', () => {
        if (!res.writableFinished) controller.abort(new Error('the agent closed the connection'));
      });
      await session.track(
        controller,
        exchange(
          {
            upstream: this.upstream,
            cache: this.cache,
            log: session.log,
            taskId: session.taskId,
            trial: session.trial,
            occurrence: (identity) => session.occurrence(identity),
            maxResponseBytes: this.#maxResponseBytes,
          },
          { actor: 'agent', routed, raw, json, headers, signal: controller.signal, startedAt },
          responseSink(res),
        ),
      );
    } catch {
      // Whatever happens to one request must not end the host.
      refuse(500, 'internal_error', 'the request could not be handled');
    }
  }
}

/** What an agent may send its token as: `Authorization: Bearer <token>` (OpenAI, and this Anthropic SDK) or `x-api-key`. */
function tokensOf(req: IncomingMessage): string[] {
  const out: string[] = [];
  const auth = req.headers.authorization;
  if (typeof auth === 'string' && /^Bearer /i.test(auth)) out.push(auth.slice(7).trim());
  const key = req.headers['x-api-key'];
  if (typeof key === 'string') out.push(key);
  return out;
}

/** The request's body, or null when it is over `max` bytes (the rest is not read). */
function readBody(req: IncomingMessage, max: number): Promise<Buffer | null> {
  const declared = Number(req.headers['content-length'] ?? Number.NaN);
  if (Number.isFinite(declared) && declared > max) return Promise.resolve(null);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    const onData = (chunk: Buffer): void => {
      bytes += chunk.length;
      if (bytes <= max) return void chunks.push(chunk);
      req.off('data', onData);
      resolve(null);
    };
    req.on('data', onData);
    req.once('end', () => resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)));
    req.once('error', reject);
    req.once('close', () => reject(new Error('the agent closed the connection')));
  });
}

/** The agent's HTTP response as a sink: chunks written as they come, waiting when it reads slowly. */
function responseSink(res: ServerResponse): Sink {
  let gone = false;
  res.once('close', () => {
    if (!res.writableFinished) gone = true;
  });
  return {
    head(status, headers) {
      if (!res.headersSent && !gone) res.writeHead(status, headers);
    },
    write(chunk) {
      if (gone || res.writableEnded) return;
      if (res.write(chunk)) return;
      return new Promise<void>((resolve) => {
        const done = (): void => {
          res.off('drain', done);
          res.off('close', done);
          resolve();
        };
        res.once('drain', done);
        res.once('close', done);
      });
    },
    end(last) {
      if (!gone) res.end(last);
    },
    abort() {
      res.destroy();
    },
    get gone() {
      return gone;
    },
  };
}
