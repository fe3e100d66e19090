/**
 * The gateway against scripted upstreams on 127.0.0.1: what it forwards and with which key, what
 * it refuses, how it relays streams (as they come), what it records, and the budget.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { eventsOf, tempDir } from '../helpers.js';
import { anthropicReply, anthropicStream, openaiReply, openaiStream, responsesReply, responsesStream, scriptedServer } from '../agents/model-server.js';
import { gate, gatewayFor, openSession, post, rawRequest } from './helpers.js';

const out = tempDir('silo-gateway-');
afterAll(() => out.remove());

const chat = { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] };

describe('the gateway forwards', () => {
  it('a chat completion with the host key instead of the token, never the agent’s credentials, and records it', async () => {
    const server = await scriptedServer([() => openaiReply({ content: 'hello', usage: { prompt: 11, completion: 3 } })]);
    const gateway = gatewayFor(server);
    try {
      const dir = tempDir('silo-gw-rec-');
      const s = await openSession(gateway, dir.dir);
      expect(s.env.OPENAI_BASE_URL).toBe(`http://127.0.0.1:${s.port}/openai/v1`);
      expect(s.env.OPENAI_API_KEY).toMatch(/^silo-[A-Za-z0-9_-]{43}$/);
      const res = await post(s, '/chat/completions', chat, { 'x-api-key': 'agent-own-key', cookie: 'session=1', 'openai-organization': 'org-agent' });
      expect(res.status).toBe(200);
      expect(((await res.json()) as any).choices[0].message.content).toBe('hello');
      const [seen] = server.requests;
      expect(seen!.path).toBe('/v1/chat/completions');
      expect(seen!.headers.authorization).toBe('Bearer sk-real');
      expect(JSON.stringify(seen!.headers)).not.toContain(s.session.token);
      expect(seen!.headers['x-api-key']).toBeUndefined();
      expect(seen!.headers.cookie).toBeUndefined();
      expect(seen!.headers['openai-organization']).toBeUndefined();
      expect(seen!.body).toEqual(chat);

      await s.session.close();
      await s.log.close();
      const [call] = eventsOf(s.trace.events, 'model_call');
      expect(call).toMatchObject({ requestId: 1, provider: 'openai', endpoint: 'chat/completions', model: 'gpt-test', stream: false, status: 200, usage: { inputTokens: 11, outputTokens: 3 } });
      expect(call!.durationMs).toBeGreaterThanOrEqual(0);
      expect(call!.queuedMs).toBeGreaterThanOrEqual(0);
      expect(call).not.toHaveProperty('cached');
      expect(s.log.usage('agent')).toEqual({ inputTokens: 11, outputTokens: 3, requests: 1, cachedRequests: 0 });
      const [line] = readFileSync(join(dir.dir, 'models.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      expect(line).toMatchObject({ requestId: 1, seq: call!.seq, actor: 'agent', provider: 'openai', request: chat, response: { choices: [{ message: { content: 'hello' } }] } });
      dir.remove();
    } finally {
      await gateway.close();
      await server.close();
    }
  });

  it('Responses and Anthropic Messages, reading usage from each protocol', async () => {
    const server = await scriptedServer([
      () => responsesReply({ text: 'r', usage: { input: 7, output: 2 } }),
      () => anthropicReply({ text: 'a', usage: { input: 5, output: 4 } }),
      (req) => ({ body: { object: 'list', data: [{ id: 'gpt-test', object: 'model' }], path: req.path } }),
    ]);
    const gateway = gatewayFor(server);
    try {
      const s = await openSession(gateway, null);
      expect((await post(s, '/responses', { model: 'gpt-test', input: 'hi' })).status).toBe(200);
      expect((await post(s, '/anthropic/v1/messages', { model: 'claude-test', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] })).status).toBe(200);
      const models = await fetch(`${s.env.OPENAI_BASE_URL}/models`, { headers: { authorization: `Bearer ${s.env.OPENAI_API_KEY}` } });
      expect(models.status).toBe(200);
      expect(server.requests.map((r) => r.path)).toEqual(['/v1/responses', '/v1/messages', '/v1/models']);
      expect(server.requests[1]!.headers['x-api-key']).toBe('ak-real');
      expect(server.requests[1]!.headers['anthropic-version']).toBe('2023-06-01');
      await s.session.close();
      expect(eventsOf(s.trace.events, 'model_call').map((e) => [e.endpoint, e.usage])).toEqual([
        ['responses', { inputTokens: 7, outputTokens: 2 }],
        ['messages', { inputTokens: 5, outputTokens: 4 }],
        ['models', { inputTokens: 0, outputTokens: 0 }],
      ]);
    } finally {
      await gateway.close();
      await server.close();
    }
  });
});

describe('the gateway refuses', () => {
  it('requests without a valid token, to other paths, too large, not JSON, naming another host, or for a provider not granted', async () => {
    const server = await scriptedServer([]);
    const gateway = gatewayFor(server, { maxRequestBytes: 1024 });
    try {
      const s = await openSession(gateway, null, { providers: ['openai'] });
      const port = s.port;
      const cases: [string, Promise<Response | { status: number; body: string }>, number, RegExp][] = [
        ['no token', fetch(`${s.env.OPENAI_BASE_URL}/chat/completions`, { method: 'POST', body: '{}' }), 401, /no valid token/],
        ['a made-up token', post({ ...s, env: { ...s.env, OPENAI_API_KEY: 'silo-guess' } }, '/chat/completions', chat), 401, /no valid token/],
        ['another path', post(s, '/files', chat), 404, /not forwarded; the gateway forwards POST \/openai\/v1\/chat\/completions/],
        ['another method', fetch(`${s.env.OPENAI_BASE_URL}/chat/completions`, { headers: { authorization: `Bearer ${s.env.OPENAI_API_KEY}` } }), 404, /GET .* is not forwarded/],
        ['too large', post(s, '/chat/completions', { ...chat, pad: 'x'.repeat(2000) }), 413, /over 1024 bytes/],
        ['not JSON', post(s, '/chat/completions', 'not json'), 400, /must be a JSON object/],
        ['another host', rawRequest(port, { path: '/openai/v1/chat/completions', headers: { host: 'evil.example:80', authorization: `Bearer ${s.env.OPENAI_API_KEY}` }, body: '{}' }), 403, /must name 127\.0\.0\.1/],
        ['a provider not granted', post({ ...s, env: { ...s.env, ANTHROPIC_BASE_URL: `http://127.0.0.1:${port}/anthropic`, ANTHROPIC_API_KEY: s.env.OPENAI_API_KEY! } }, '/anthropic/v1/messages', {}), 403, /not granted anthropic/],
      ];
      for (const [what, pending, status, message] of cases) {
        const res = await pending;
        const text = 'text' in res ? await res.text() : res.body;
        expect([what, res.status], text).toEqual([what, status]);
        expect(JSON.parse(text).error.message, what).toMatch(message);
        if ('headers' in res) expect(res.headers.get('x-should-retry')).toBe('false');
      }
      expect(server.requests).toEqual([]);
      expect(s.session.admitted).toBe(0);
    } finally {
      await gateway.close();
      await server.close();
    }
  });

  it('to pass on an answer over its cap: the agent gets a JSON error saying so, not a dropped connection', async () => {
    const server = await scriptedServer([() => openaiReply({ content: 'x'.repeat(5000), usage: { prompt: 1, completion: 1 } })]);
    const gateway = gatewayFor(server, { maxResponseBytes: 1000 });
    try {
      const s = await openSession(gateway, null);
      const res = await post(s, '/chat/completions', chat);
      expect(res.status).toBe(502);
      expect(res.headers.get('x-should-retry')).toBe('false');
      expect(((await res.json()) as any).error).toMatchObject({ type: 'response_too_large', message: "silo gateway: the response was cut off at 1000 bytes (the gateway's cap); ask the model for less" });
      await s.session.close();
      expect(eventsOf(s.trace.events, 'model_call')[0]).toMatchObject({ status: 502, error: "the response was cut off at 1000 bytes (the gateway's cap)" });
      // (a cap of Silo's, not a failure of the provider's)
      expect(s.log.failure('agent')).toBeUndefined();
    } finally {
      await gateway.close();
      await server.close();
    }
  });

  it("a token once its rollout's session is closed", async () => {
    const server = await scriptedServer([() => openaiReply({ content: 'one', usage: { prompt: 1, completion: 1 } })]);
    const gateway = gatewayFor(server);
    try {
      const s = await openSession(gateway, null);
      expect((await post(s, '/chat/completions', chat)).status).toBe(200);
      await s.session.close();
      const late = await post(s, '/chat/completions', chat);
      expect(late.status).toBe(401);
      expect(server.requests).toHaveLength(1);
      expect(gateway.sessions).toBe(0);
    } finally {
      await gateway.close();
      await server.close();
    }
  });
});

describe('streams', () => {
  it('are relayed as they come: the agent reads the first chunk before the upstream sends the last', async () => {
    const g = gate();
    const server = await scriptedServer([(req) => openaiStream(req, { pieces: ['Hel', 'lo'], usage: { prompt: 9, completion: 2 }, gate: g.wait })]);
    const gateway = gatewayFor(server);
    try {
      const s = await openSession(gateway, null);
      const res = await post(s, '/chat/completions', { ...chat, stream: true });
      expect(res.headers.get('content-type')).toContain('text/event-stream');
      const reader = res.body!.getReader();
      let text = '';
      // The upstream holds the rest of the stream until the gate opens: had the gateway waited for
      // the whole response, nothing would arrive and this test would time out.
      while (!text.includes('"Hel"')) text += new TextDecoder().decode((await reader.read()).value);
      expect(text).not.toContain('[DONE]');
      g.release();
      for (let r = await reader.read(); !r.done; r = await reader.read()) text += new TextDecoder().decode(r.value);
      expect(text).toContain('"lo"');
      expect(text.trim().endsWith('data: [DONE]')).toBe(true);
      // The gateway asked for usage; the agent receives the stream it would have had without it.
      expect(server.requests[0]!.body.stream_options).toEqual({ include_usage: true });
      expect(text).not.toContain('usage');
      const events = text.split('\n\n').filter((e) => e.startsWith('data: {'));
      expect(events.map((e) => JSON.parse(e.slice(6)).choices.length)).toEqual([1, 1, 1, 1]);
      await s.session.close();
      expect(eventsOf(s.trace.events, 'model_call')[0]).toMatchObject({ stream: true, status: 200, usage: { inputTokens: 9, outputTokens: 2 } });
    } finally {
      await gateway.close();
      await server.close();
    }
  });

  it('pass through untouched when the agent asked for usage itself, and read usage from Responses and Anthropic streams', async () => {
    const server = await scriptedServer([
      (req) => openaiStream(req, { pieces: ['a'], usage: { prompt: 3, completion: 1 } }),
      () => responsesStream({ pieces: ['x', 'y'], usage: { input: 6, output: 2 } }),
      () => anthropicStream({ pieces: ['p', 'q'], usage: { input: 8, output: 5 } }),
    ]);
    const gateway = gatewayFor(server);
    try {
      const s = await openSession(gateway, null);
      const asked = { ...chat, stream: true, stream_options: { include_usage: true } };
      const first = await (await post(s, '/chat/completions', asked)).text();
      expect(first).toContain('"usage":{"prompt_tokens":3');
      expect(server.requests[0]!.body).toEqual(asked);
      const second = await (await post(s, '/responses', { model: 'gpt-test', input: 'hi', stream: true })).text();
      expect(second).toContain('event: response.completed');
      const third = await (await post(s, '/anthropic/v1/messages', { model: 'c', max_tokens: 9, stream: true, messages: [] })).text();
      expect(third).toContain('event: message_stop');
      await s.session.close();
      expect(eventsOf(s.trace.events, 'model_call').map((e) => e.usage)).toEqual([
        { inputTokens: 3, outputTokens: 1 },
        { inputTokens: 6, outputTokens: 2 },
        { inputTokens: 8, outputTokens: 5 },
      ]);
    } finally {
      await gateway.close();
      await server.close();
    }
  });

  it('are aborted upstream when the agent goes away, and recorded', async () => {
    const g = gate();
    const abandoned = gate();
    const server = await scriptedServer([(req) => ({ ...openaiStream(req, { pieces: ['a', 'b'], usage: { prompt: 1, completion: 1 }, gate: g.wait }), onAbandoned: abandoned.release })]);
    const gateway = gatewayFor(server);
    try {
      const s = await openSession(gateway, null);
      const res = await post(s, '/chat/completions', { ...chat, stream: true });
      const reader = res.body!.getReader();
      await reader.read();
      await reader.cancel();
      // The upstream sees its connection closed while it still holds the rest of the stream.
      await abandoned.wait();
      await s.session.close();
      const [call] = eventsOf(s.trace.events, 'model_call');
      expect(call!.error).toMatch(/closed the connection|aborted/);
      g.release();
    } finally {
      await gateway.close();
      await server.close();
    }
  });

  it('in flight are aborted and recorded when the session closes (the rollout ended)', async () => {
    const g = gate();
    const abandoned = gate();
    const server = await scriptedServer([(req) => ({ ...openaiStream(req, { pieces: ['a', 'b'], usage: { prompt: 1, completion: 1 }, gate: g.wait }), onAbandoned: abandoned.release })]);
    const gateway = gatewayFor(server);
    try {
      const s = await openSession(gateway, null);
      const res = await post(s, '/chat/completions', { ...chat, stream: true });
      const reader = res.body!.getReader();
      await reader.read();
      await s.session.close();
      await abandoned.wait();
      expect(eventsOf(s.trace.events, 'model_call')[0]!.error).toMatch(/aborted: the rollout's agent phase ended/);
      await expect(reader.read().then(async (r) => (r.done ? 'done' : reader.read()))).rejects.toThrow();
      g.release();
    } finally {
      await gateway.close();
      await server.close();
    }
  });
});

describe('the budget', () => {
  it('refuses the request past maxModelRequests with 403 naming the limit, fires the limit once, counts every refusal', async () => {
    const server = await scriptedServer(Array.from({ length: 3 }, () => () => openaiReply({ content: 'ok', usage: { prompt: 1, completion: 1 } })));
    const gateway = gatewayFor(server);
    try {
      const s = await openSession(gateway, null, { limits: { maxModelRequests: 2 } });
      expect((await post(s, '/chat/completions', chat)).status).toBe(200);
      expect((await post(s, '/chat/completions', chat)).status).toBe(200);
      for (let i = 0; i < 3; i++) {
        const refused = await post(s, '/chat/completions', chat);
        expect(refused.status).toBe(403);
        const body = (await refused.json()) as any;
        expect(body.error).toMatchObject({ type: 'limit_exceeded', limit: 'maxModelRequests' });
        expect(body.error.message).toMatch(/more than 2 model requests \(maxModelRequests\)/);
      }
      expect(server.requests).toHaveLength(2);
      expect(s.limitsFired).toEqual([{ limit: 'maxModelRequests', reason: expect.stringMatching(/maxModelRequests/) }]);
      expect(s.session.refused).toBe(3);
      // The first refusal is in the trace; the others are only counted.
      const calls = eventsOf(s.trace.events, 'model_call');
      expect(calls.map((c) => c.status)).toEqual([200, 200, 403]);
      // (a limit of 1: "1 model request", singular)
      const one = await openSession(gateway, null, { limits: { maxModelRequests: 1 } });
      expect((await post(one, '/chat/completions', chat)).status).toBe(200);
      expect(((await (await post(one, '/chat/completions', chat)).json()) as any).error.message).toMatch(/the agent made more than 1 model request \(maxModelRequests\)$/);
    } finally {
      await gateway.close();
      await server.close();
    }
  });

  it('refuses any request once the tokens reached maxTokens', async () => {
    const server = await scriptedServer(Array.from({ length: 2 }, () => () => openaiReply({ content: 'ok', usage: { prompt: 60, completion: 10 } })));
    const gateway = gatewayFor(server);
    try {
      const s = await openSession(gateway, null, { limits: { maxModelRequests: 10, maxTokens: 100 } });
      expect((await post(s, '/chat/completions', chat)).status).toBe(200);
      // 70 tokens so far: under the budget, so the next goes (and takes the total past it).
      expect((await post(s, '/chat/completions', chat)).status).toBe(200);
      const refused = await post(s, '/chat/completions', chat);
      expect(refused.status).toBe(403);
      expect(((await refused.json()) as any).error.limit).toBe('maxTokens');
      expect(s.limitsFired.map((f) => f.limit)).toEqual(['maxTokens']);
    } finally {
      await gateway.close();
      await server.close();
    }
  });

  it('lets nothing through once another limit of the rollout fired (stop)', async () => {
    const server = await scriptedServer([]);
    const gateway = gatewayFor(server);
    try {
      const s = await openSession(gateway, null);
      s.session.stop('timeoutMs', 'timeout: the agent ran for 10 ms (timeoutMs)');
      const refused = await post(s, '/chat/completions', chat);
      expect(refused.status).toBe(403);
      expect(((await refused.json()) as any).error.limit).toBe('timeoutMs');
      expect(s.limitsFired).toEqual([]);
      expect(server.requests).toEqual([]);
    } finally {
      await gateway.close();
      await server.close();
    }
  });
});
