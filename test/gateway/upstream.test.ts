/**
 * The gateway's side towards the providers: retries with backoff honouring `retry-after`, lost
 * connections tried again, the cap on requests in flight shared by every rollout, and `queuedMs`.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { errorReply, openaiReply, scriptedServer, sse, type StreamReply } from '../agents/model-server.js';
import { mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventsOf } from '../helpers.js';
import { Limiter } from '../../src/gateway/limiter.js';
import { retryAfterMs } from '../../src/gateway/upstream.js';
import { Gateway } from '../../src/gateway/gateway.js';
import { gate, gatewayFor, openSession, post } from './helpers.js';

const chat = { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] };
const ok = (): string => JSON.stringify(openaiReply({ content: 'ok', usage: { prompt: 2, completion: 1 } }).body);

/** A bare upstream: `handle` gets every request with its number. */
async function bareUpstream(handle: (n: number, req: IncomingMessage, res: ServerResponse) => void): Promise<{ origin: string; count: () => number; close: () => Promise<void> }> {
  let n = 0;
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => handle(n++, req, res));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    count: () => n,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

describe('retries', () => {
  it('tries a 429 again after the wait the provider asks for, and records the retry and the wait', async () => {
    const server = await scriptedServer([() => errorReply(429, { 'retry-after-ms': '60' }), () => openaiReply({ content: 'ok', usage: { prompt: 4, completion: 1 } })]);
    const gateway = gatewayFor(server);
    try {
      const s = await openSession(gateway, null);
      const res = await post(s, '/chat/completions', chat);
      expect(res.status).toBe(200);
      expect(server.requests).toHaveLength(2);
      await s.session.close();
      const [call] = eventsOf(s.trace.events, 'model_call');
      expect(call).toMatchObject({ status: 200, retries: 1, usage: { inputTokens: 4, outputTokens: 1 } });
      expect(call!.queuedMs).toBeGreaterThanOrEqual(55);
    } finally {
      await gateway.close();
      await server.close();
    }
  });

  it('hands the agent the last failure once the tries are spent, telling its SDK not to retry', async () => {
    const server = await scriptedServer(Array.from({ length: 3 }, () => () => errorReply(503)));
    const gateway = gatewayFor(server, { retries: 2 });
    try {
      const s = await openSession(gateway, null);
      const res = await post(s, '/chat/completions', chat);
      expect(res.status).toBe(503);
      expect(res.headers.get('x-should-retry')).toBe('false');
      expect(((await res.json()) as any).error.message).toBe('scripted 503');
      expect(server.requests).toHaveLength(3);
      await s.session.close();
      expect(eventsOf(s.trace.events, 'model_call')[0]).toMatchObject({ status: 503, retries: 2 });
      // A failure on the provider's side, not the agent's: a run that does not pass is a model_error.
      expect(s.log.failure('agent')).toBe('the openai upstream answered 503 (scripted 503): the provider kept failing: try again later');
    } finally {
      await gateway.close();
      await server.close();
    }
  });

  it('does not retry a request the provider refused (400)', async () => {
    const server = await scriptedServer([() => ({ status: 400, body: { error: { message: 'bad model' } } })]);
    const gateway = gatewayFor(server);
    try {
      const s = await openSession(gateway, null);
      expect((await post(s, '/chat/completions', chat)).status).toBe(400);
      expect(server.requests).toHaveLength(1);
      // What the caller sent was refused: the provider did not fail.
      expect(s.log.failure('agent')).toBeUndefined();
    } finally {
      await gateway.close();
      await server.close();
    }
  });

  it('tries again when the connection is lost before an answer, and answers 502 when it always is', async () => {
    const flaky = await bareUpstream((n, _req, res) => {
      if (n === 0) return void res.socket?.destroy();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(ok());
    });
    const dead = await bareUpstream((_n, _req, res) => void res.socket?.destroy());
    const upstreams = (origin: string) => ({ openai: { baseUrl: `${origin}/v1`, apiKey: 'k' } });
    const a = new Gateway({ env: {}, upstreams: upstreams(flaky.origin), backoffMs: 5 });
    const b = new Gateway({ env: {}, upstreams: upstreams(dead.origin), backoffMs: 5, retries: 2 });
    try {
      const s = await openSession(a, null);
      expect((await post(s, '/chat/completions', chat)).status).toBe(200);
      expect(flaky.count()).toBe(2);
      // Lost once, answered the next time: no failure of the provider's.
      expect(s.log.failure('agent')).toBeUndefined();
      const t = await openSession(b, null);
      const res = await post(t, '/chat/completions', chat);
      expect(res.status).toBe(502);
      expect(((await res.json()) as any).error.message).toMatch(/no answer from the openai upstream .* after 3 tries/);
      expect(dead.count()).toBe(3);
      await t.session.close();
      expect(eventsOf(t.trace.events, 'model_call')[0]).toMatchObject({ status: 502, retries: 2, error: expect.stringMatching(/no answer/) });
      expect(t.log.failure('agent')).toBe(
        `no answer from the openai upstream at ${dead.origin}/v1 (socket hang up) after 3 tries: check OPENAI_BASE_URL and that the server is up`,
      );
    } finally {
      await Promise.all([a.close(), b.close()]);
      await Promise.all([flaky.close(), dead.close()]);
    }
  });

  it("tells the host's key refused (401, 403) and a response that broke off from the agent's own mistakes", async () => {
    const server = await scriptedServer([
      () => ({ status: 401, body: { error: { message: 'Incorrect API key provided:\n sk-real.', type: 'invalid_request_error' } } }),
      () => ({ status: 403, body: { type: 'error', error: { type: 'permission_error', message: 'no access' } } }),
      () => ({ status: 404, body: { error: { message: 'The model gpt-nope does not exist' } } }),
    ]);
    const broken = await bareUpstream((_n, _req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
      res.write('{"choices":');
      setTimeout(() => res.socket?.destroy(), 5);
    });
    const gateway = gatewayFor(server);
    const other = new Gateway({ env: {}, upstreams: { openai: { baseUrl: `${broken.origin}/v1`, apiKey: 'k' } }, backoffMs: 5 });
    try {
      const failureAfter = async (g: Gateway, path: string): Promise<string | undefined> => {
        const s = await openSession(g, null);
        // (a response that broke off rejects: the agent's SDK sees the connection end)
        await post(s, path, chat).then((res) => res.text()).catch(() => '');
        await s.session.close();
        return s.log.failure('agent');
      };
      expect(await failureAfter(gateway, '/chat/completions')).toBe('the openai upstream answered 401 (Incorrect API key provided: sk-real.): check OPENAI_API_KEY on this machine');
      expect(await failureAfter(gateway, '/anthropic/v1/messages')).toBe('the anthropic upstream answered 403 (no access): check ANTHROPIC_API_KEY on this machine');
      expect(await failureAfter(gateway, '/chat/completions')).toBeUndefined();
      expect(await failureAfter(other, '/chat/completions')).toMatch(/^the openai upstream's response broke off: /);
    } finally {
      await Promise.all([gateway.close(), other.close()]);
      await Promise.all([server.close(), broken.close()]);
    }
  });

  it('forgets a failure once a later request is answered, counts an error event in a stream (not cached), and not a 429 for a request too large', async () => {
    const ok = () => openaiReply({ content: 'ok', usage: { prompt: 1, completion: 1 } });
    const overloaded = (): StreamReply => ({
      chunks: [sse({ type: 'message_start', message: { id: 'm', type: 'message', role: 'assistant', content: [], usage: { input_tokens: 3, output_tokens: 1 } } }, 'message_start'), sse({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }, 'error')],
    });
    const server = await scriptedServer([
      () => errorReply(503),
      ok,
      overloaded,
      overloaded,
      () => ({ status: 429, body: { error: { message: 'Request too large for gpt-4o in organization org-x on tokens per min (TPM): Limit 30000, Requested 90000.', type: 'tokens' } } }),
      () => ({ status: 429, body: { error: { message: 'You exceeded your current quota, please check your plan and billing details.', type: 'insufficient_quota' } } }),
    ]);
    const dir = join(tmpdir(), `silo-gw-fail-${process.pid}`);
    mkdirSync(dir, { recursive: true });
    const gateway = gatewayFor(server, { retries: 0, cache: { dir, mode: 'readwrite' } });
    try {
      const s = await openSession(gateway, null);
      // Each request is recorded once it has ended (after its answer is stored in the cache).
      let sent = 0;
      const send = async (path: string, body: unknown): Promise<void> => {
        await (await post(s, path, body)).text();
        sent++;
        while (eventsOf(s.trace.events, 'model_call').length < sent) await new Promise((resolve) => setTimeout(resolve, 5));
      };
      await send('/chat/completions', chat);
      expect(s.log.failure('agent')).toMatch(/^the openai upstream answered 503/);
      await send('/chat/completions', { ...chat, n: 2 });
      expect(s.log.failure('agent')).toBeUndefined();
      const stream = { model: 'claude-test', max_tokens: 10, stream: true, messages: [{ role: 'user', content: 'hi' }] };
      await send('/anthropic/v1/messages', stream);
      expect(s.log.failure('agent')).toBe("the anthropic upstream's stream carried an error (Overloaded): the provider kept failing: try again later");
      // Not stored: the same request goes upstream again (the second of the server's streams).
      await send('/anthropic/v1/messages', stream);
      expect(eventsOf(s.trace.events, 'model_call').filter((c) => c.cached)).toEqual([]);
      await send('/chat/completions', { ...chat, n: 3 });
      expect(s.log.failure('agent')).toBeUndefined();
      await send('/chat/completions', { ...chat, n: 4 });
      expect(s.log.failure('agent')).toBe(
        "the openai upstream answered 429 (You exceeded your current quota, please check your plan and billing details.): the provider refused for the account's quota: check its plan and billing",
      );
      expect(server.requests).toHaveLength(6);
    } finally {
      await gateway.close();
      await server.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('says once, at its first request, that the host has no key for a provider', async () => {
    const server = await scriptedServer([() => openaiReply({ content: 'a', usage: { prompt: 1, completion: 1 } }), () => openaiReply({ content: 'b', usage: { prompt: 1, completion: 1 } })]);
    const told: string[] = [];
    const gateway = new Gateway({ env: {}, upstreams: { openai: { baseUrl: `${server.origin}/v1` } }, warn: (m) => told.push(m) });
    try {
      const s = await openSession(gateway, null);
      expect(told).toEqual([]);
      for (let i = 0; i < 2; i++) expect((await post(s, '/chat/completions', chat)).status).toBe(200);
      expect(told).toEqual([`OPENAI_API_KEY is not set here, so openai requests go to ${server.origin}/v1 without a key (a local server may need none; otherwise set OPENAI_API_KEY in this shell)`]);
      expect(server.requests.map((r) => r.headers.authorization)).toEqual([undefined, undefined]);
    } finally {
      await gateway.close();
      await server.close();
    }
  });

  it('reads retry-after in milliseconds, seconds or as a date', () => {
    expect(retryAfterMs({ 'retry-after-ms': '250' })).toBe(250);
    expect(retryAfterMs({ 'retry-after': '2' })).toBe(2000);
    const inFive = retryAfterMs({ 'retry-after': new Date(Date.now() + 5000).toUTCString() })!;
    expect(inFive).toBeGreaterThan(3000);
    expect(inFive).toBeLessThanOrEqual(5000);
    expect(retryAfterMs({ 'retry-after': 'soon' })).toBeUndefined();
    expect(retryAfterMs({})).toBeUndefined();
  });
});

describe('--model-concurrency', () => {
  it('caps requests in flight upstream across every session of the gateway; the wait is queuedMs', async () => {
    let inFlight = 0;
    let most = 0;
    const release = gate();
    const held: ServerResponse[] = [];
    const upstream = await bareUpstream((_n, _req, res) => {
      inFlight++;
      most = Math.max(most, inFlight);
      held.push(res);
      void release.wait().then(() => {
        inFlight--;
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(ok());
      });
    });
    const gateway = new Gateway({ env: {}, upstreams: { openai: { baseUrl: `${upstream.origin}/v1`, apiKey: 'k' } }, concurrency: 2 });
    try {
      // Six rollouts, one request each.
      const sessions = await Promise.all(Array.from({ length: 6 }, () => openSession(gateway, null)));
      const pending = sessions.map((s) => post(s, '/chat/completions', chat));
      // Two reach the upstream; the other four wait for a slot (and still do a while later).
      while (gateway.upstream.load('openai').waiting < 4) await new Promise((resolve) => setTimeout(resolve, 10));
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(upstream.count()).toBe(2);
      expect(gateway.upstream.load('openai')).toEqual({ inFlight: 2, waiting: 4 });
      release.release();
      expect((await Promise.all(pending)).map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
      expect(most).toBe(2);
      await Promise.all(sessions.map((s) => s.session.close()));
      const queued = sessions.map((s) => eventsOf(s.trace.events, 'model_call')[0]!.queuedMs);
      expect(queued.filter((ms) => ms >= 50)).toHaveLength(4);
    } finally {
      await gateway.close();
      await upstream.close();
    }
  });
});

describe('Limiter', () => {
  it('hands slots out in order and drops a waiter whose signal fires', async () => {
    const limiter = new Limiter(1);
    const first = await limiter.acquire();
    const controller = new AbortController();
    const order: string[] = [];
    const aborted = limiter.acquire(controller.signal).then(
      () => order.push('aborted one got it'),
      () => order.push('aborted'),
    );
    const second = limiter.acquire().then((release) => {
      order.push('second');
      return release;
    });
    controller.abort();
    await aborted;
    first();
    (await second)();
    expect(order).toEqual(['aborted', 'second']);
    expect(limiter.inFlight).toBe(0);
  });
});
