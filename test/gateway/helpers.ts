/** Gateways for tests: one in front of a scripted upstream, a session, and requests as an agent sends them. */
import { request } from 'node:http';
import { join } from 'node:path';
import { Gateway, type GatewayGrant, type GatewayOptions } from '../../src/gateway/gateway.js';
import { ModelLog } from '../../src/gateway/record.js';
import type { Provider } from '../../src/gateway/providers.js';
import type { ModelLimits } from '../../src/gateway/session.js';
import { Trace } from '../../src/rollout/trace.js';
import type { ScriptedServer } from '../agents/model-server.js';

/** A gateway whose upstreams are `server` (openai under /v1, anthropic at its origin), keys sk-real / ak-real. */
export function gatewayFor(server: ScriptedServer, options: GatewayOptions = {}): Gateway {
  return new Gateway({
    env: {},
    upstreams: { openai: { baseUrl: `${server.origin}/v1`, apiKey: 'sk-real' }, anthropic: { baseUrl: server.origin, apiKey: 'ak-real' } },
    backoffMs: 5,
    ...options,
  });
}

export interface TestSession extends GatewayGrant {
  trace: Trace;
  log: ModelLog;
  limitsFired: { limit: string; reason: string }[];
}

/** Opens a session as a rollout would, its model calls in `trace` (memory) and `dir`/models.jsonl. */
export async function openSession(
  gateway: Gateway,
  dir: string | null,
  options: { providers?: Provider[]; limits?: Partial<ModelLimits>; taskId?: string; trial?: number | null } = {},
): Promise<TestSession> {
  const trace = new Trace(null);
  const log = new ModelLog(trace, dir === null ? null : join(dir, 'models.jsonl'));
  const grant = await gateway.open({
    providers: options.providers ?? ['openai', 'anthropic'],
    limits: { maxModelRequests: 200, ...options.limits },
    log,
    taskId: options.taskId ?? 'task/1',
    trial: options.trial === undefined ? 0 : options.trial,
  });
  const limitsFired: { limit: string; reason: string }[] = [];
  grant.session.onLimit((limit, reason) => limitsFired.push({ limit, reason }));
  return { ...grant, trace, log, limitsFired };
}

/** What an agent's SDK sends: a JSON POST with the token as its key. */
export function post(session: GatewayGrant, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  const base = path.startsWith('/anthropic') ? session.env.ANTHROPIC_BASE_URL! : session.env.OPENAI_BASE_URL!;
  const url = path.startsWith('/anthropic') ? `${base}${path.slice('/anthropic'.length)}` : `${base}${path}`;
  const auth = path.startsWith('/anthropic') ? { 'x-api-key': session.env.ANTHROPIC_API_KEY! } : { authorization: `Bearer ${session.env.OPENAI_API_KEY!}` };
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', ...auth, ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
}

/** A raw request with any Host header (fetch will not send another host's name). */
export function rawRequest(port: number, options: { method?: string; path: string; headers?: Record<string, string>; body?: string }): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, method: options.method ?? 'POST', path: options.path, headers: options.headers ?? {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }));
    });
    req.on('error', reject);
    req.end(options.body);
  });
}

/** Resolves when `release` is called: a gate for a scripted stream. */
export function gate(): { wait: () => Promise<void>; release: () => void } {
  let release!: () => void;
  const opened = new Promise<void>((resolve) => (release = resolve));
  return { wait: () => opened, release };
}
