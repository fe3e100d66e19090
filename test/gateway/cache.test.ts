/**
 * The model cache: keyed by the request, the task, the trial and the occurrence within the
 * rollout; replayed without an upstream request; entries that are not whole are misses; writers
 * racing on one key never leave a torn entry.
 */
import { fork } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { cacheKeyHash, canonicalJson, ModelCache, type CacheKey } from '../../src/gateway/cache.js';
import { openaiReply, openaiStream, scriptedServer } from '../agents/model-server.js';
import { eventsOf, tempDir } from '../helpers.js';
import { gatewayFor, openSession, post } from './helpers.js';

const out = tempDir('silo-cache-');
afterAll(() => out.remove());

const key = (over: Partial<CacheKey> = {}): CacheKey => ({
  actor: 'agent',
  provider: 'openai',
  endpoint: 'chat/completions',
  path: '/chat/completions',
  body: { model: 'm', messages: [] },
  taskId: 't',
  trial: 0,
  occurrence: 0,
  ...over,
});

const entries = (dir: string): string[] => (existsSync(dir) ? readdirSync(dir, { recursive: true }).map(String).filter((f) => f.endsWith('.json')) : []);

describe('cache keys', () => {
  it('are the same for the same request whatever its key order, and differ by task, trial, occurrence and body', () => {
    const a = cacheKeyHash(key({ body: { model: 'm', messages: [], temperature: 0 } }));
    expect(cacheKeyHash(key({ body: { temperature: 0, messages: [], model: 'm' } }))).toBe(a);
    const others = [key({ taskId: 'u' }), key({ trial: 1 }), key({ occurrence: 1 }), key({ body: { model: 'n', messages: [] } }), key({ actor: 'user' }), key({ provider: 'anthropic' })];
    expect(new Set([a, ...others.map((k) => cacheKeyHash({ ...k, body: { model: 'm', messages: [], temperature: 0, ...(k.body as object) } }))]).size).toBe(7);
    expect(canonicalJson({ b: [{ d: 1, c: 2 }], a: null })).toBe('{"a":null,"b":[{"c":2,"d":1}]}');
  });
});

describe('ModelCache', () => {
  it('stores and replays a response; an entry cut short, edited or not JSON is a miss', async () => {
    const dir = join(out.dir, 'entries');
    const cache = new ModelCache(dir);
    const hash = cacheKeyHash(key());
    const response = { status: 200, contentType: 'application/json', body: '{"ok":true}', usage: { inputTokens: 3, outputTokens: 1 } };
    expect(await cache.get(hash)).toBeNull();
    expect(await cache.put(hash, key(), response)).toBe(true);
    expect(await cache.get(hash)).toEqual(response);
    const [file] = entries(dir);
    const path = join(dir, file!);
    const whole = readFileSync(path, 'utf8');
    for (const broken of [whole.slice(0, whole.length - 20), whole.replace('{\\"ok\\":true}', '{\\"ok\\":false}'), 'not json', '']) {
      writeFileSync(path, broken);
      expect(await cache.get(hash)).toBeNull();
    }
  });

  it('in read mode, refuses a folder that is not there (nothing to replay: a typo, most likely)', () => {
    const missing = join(out.dir, 'no-such-cache');
    expect(() => new ModelCache(missing, 'read')).toThrow(`the model cache ${missing} is not a folder: mode read replays a cache written before (fill one with --model-cache-mode readwrite or write)`);
    writeFileSync(missing, 'a file');
    expect(() => new ModelCache(missing, 'read')).toThrow(/is not a folder/);
    // The other modes make it as they store.
    expect(new ModelCache(join(out.dir, 'made-later'), 'write').mode).toBe('write');
  });

  it('never tears an entry when processes write the same key at once', async () => {
    const dir = join(out.dir, 'race');
    const hash = cacheKeyHash(key());
    // Four processes write the key 40 times each, bodies of their own sizes, while this one reads.
    const writer = join(out.dir, 'writer.mjs');
    writeFileSync(
      writer,
      `const { ModelCache } = await import(${JSON.stringify(pathToFileURL(resolve('dist/src/gateway/cache.js')).href)});
      const [dir, me, hash] = process.argv.slice(2);
      const cache = new ModelCache(dir);
      for (let i = 0; i < 40; i++) {
        const body = JSON.stringify({ me: Number(me), i, pad: 'x'.repeat(20000 + Number(me) * 7000) });
        if (!(await cache.put(hash, { body: null }, { status: 200, contentType: 'application/json', body, usage: null }))) process.exit(1);
      }`,
    );
    const exits = [0, 1, 2, 3].map((me) => new Promise<number | null>((done) => fork(writer, [dir, String(me), hash], { stdio: 'ignore' }).on('exit', done)));
    let running = true;
    const all = Promise.all(exits).finally(() => (running = false));
    const cache = new ModelCache(dir);
    let whole = 0;
    /** Reads that found no whole entry after one was there: with writes in place, readers see torn files. */
    let torn = 0;
    while (running) {
      const entry = await cache.get(hash);
      if (!entry && whole > 0) torn++;
      if (entry) {
        // Whatever was read is one writer's entry, entire.
        const body = JSON.parse(entry.body) as { me: number; pad: string };
        expect(body.pad.length).toBe(20000 + body.me * 7000);
        whole++;
      }
    }
    expect(await all).toEqual([0, 0, 0, 0]);
    expect(whole).toBeGreaterThan(0);
    expect(torn).toBe(0);
    expect(await cache.get(hash)).not.toBeNull();
    // No temporary file is left behind.
    expect(readdirSync(dir, { recursive: true }).map(String).filter((f) => f.endsWith('.tmp'))).toEqual([]);
  });
});

describe('through the gateway', () => {
  it('replays a rollout’s responses with no upstream request, per trial and occurrence; read mode stores nothing, write mode reads nothing', async () => {
    const dir = join(out.dir, 'gateway');
    mkdirSync(dir);
    let n = 0;
    const answer = () => openaiReply({ content: `answer ${++n}`, usage: { prompt: 5, completion: 2 } });
    const server = await scriptedServer(Array.from({ length: 20 }, () => answer));
    const req = { model: 'gpt-test', messages: [{ role: 'user', content: 'same question' }] };
    const rollout = async (mode: 'read' | 'write' | 'readwrite', trial: number): Promise<string[]> => {
      const gateway = gatewayFor(server, { cache: { dir, mode } });
      try {
        const s = await openSession(gateway, null, { taskId: 'task/cached', trial });
        const texts: string[] = [];
        // The same request twice in one rollout: two occurrences, two answers.
        for (let i = 0; i < 2; i++) texts.push(((await (await post(s, '/chat/completions', req)).json()) as any).choices[0].message.content);
        await s.session.close();
        const calls = eventsOf(s.trace.events, 'model_call');
        expect(calls.every((c) => c.usage.inputTokens === 5)).toBe(true);
        return texts.map((t, i) => `${t}${calls[i]!.cached ? ' (cached)' : ''}`);
      } finally {
        await gateway.close();
      }
    };
    try {
      expect(await rollout('read', 0)).toEqual(['answer 1', 'answer 2']);
      expect(entries(dir)).toEqual([]);
      expect(await rollout('readwrite', 0)).toEqual(['answer 3', 'answer 4']);
      expect(entries(dir)).toHaveLength(2);
      // Trial 0 again: replayed, in order, with nothing sent upstream.
      const before = server.requests.length;
      expect(await rollout('read', 0)).toEqual(['answer 3 (cached)', 'answer 4 (cached)']);
      expect(await rollout('readwrite', 0)).toEqual(['answer 3 (cached)', 'answer 4 (cached)']);
      expect(server.requests.length).toBe(before);
      // Another trial samples its own answers.
      expect(await rollout('readwrite', 1)).toEqual(['answer 5', 'answer 6']);
      // Write mode asks upstream again and replaces what it stores.
      expect(await rollout('write', 0)).toEqual(['answer 7', 'answer 8']);
      expect(await rollout('read', 0)).toEqual(['answer 7 (cached)', 'answer 8 (cached)']);
    } finally {
      await server.close();
    }
  });

  it('replays a stream as the agent received it, and stores no failed response', async () => {
    const dir = join(out.dir, 'stream');
    const server = await scriptedServer([(req) => openaiStream(req, { pieces: ['x', 'y'], usage: { prompt: 4, completion: 2 } }), () => ({ status: 400, body: { error: { message: 'no' } } })]);
    const gateway = gatewayFor(server, { cache: { dir } });
    const again = gatewayFor(server, { cache: { dir } });
    try {
      const s = await openSession(gateway, null);
      const streamed = await (await post(s, '/chat/completions', { model: 'm', messages: [], stream: true })).text();
      expect((await post(s, '/chat/completions', { model: 'bad', messages: [] })).status).toBe(400);
      await s.session.close();
      expect(entries(dir)).toHaveLength(1);
      const t = await openSession(again, null);
      const replayed = await post(t, '/chat/completions', { model: 'm', messages: [], stream: true });
      expect(replayed.headers.get('content-type')).toContain('text/event-stream');
      expect(await replayed.text()).toBe(streamed);
      await t.session.close();
      expect(eventsOf(t.trace.events, 'model_call')[0]).toMatchObject({ cached: true, stream: true, usage: { inputTokens: 4, outputTokens: 2 } });
      expect(server.requests).toHaveLength(2);
    } finally {
      await Promise.all([gateway.close(), again.close()]);
      await server.close();
    }
  });
});
