// The model gateway's share of a model request, for `npm run bench`: a scripted upstream on
// 127.0.0.1 called directly and through the gateway, non-streamed (latency added per request) and
// streamed (latency added per chunk); and 256 rollouts streaming through one gateway at once.
import { Agent, createServer, request } from 'node:http';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { performance } from 'node:perf_hooks';
import { Gateway } from '../../dist/src/gateway/gateway.js';
import { ModelLog } from '../../dist/src/gateway/record.js';
import { Trace } from '../../dist/src/rollout/trace.js';

const COMPLETION = JSON.stringify({
  id: 'chatcmpl-bench',
  object: 'chat.completion',
  created: 1,
  model: 'bench',
  choices: [{ index: 0, message: { role: 'assistant', content: 'ok' }, finish_reason: 'stop' }],
  usage: { prompt_tokens: 12, completion_tokens: 1, total_tokens: 13 },
});

const chunk = (i, withUsage) =>
  `data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1, model: 'bench', choices: [{ index: 0, delta: { content: `piece ${i} ` }, finish_reason: null }], ...(withUsage ? { usage: null } : {}) })}\n\n`;

/**
 * A scripted upstream: a chat completion at once, or a stream of `chunks` chunks, each written in
 * a turn of its own (or every `gapMs`), then the usage chunk when asked for and [DONE].
 */
export async function benchUpstream({ chunks = 100, gapMs = 0 } = {}) {
  const server = createServer((req, res) => {
    const parts = [];
    req.on('data', (d) => parts.push(d));
    req.on('end', async () => {
      const body = JSON.parse(Buffer.concat(parts).toString() || '{}');
      if (!body.stream) {
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(COMPLETION);
      }
      const withUsage = body.stream_options?.include_usage === true;
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      for (let i = 0; i < chunks; i++) {
        res.write(chunk(i, withUsage));
        await new Promise((resolve) => (gapMs > 0 ? setTimeout(resolve, gapMs) : setImmediate(resolve)));
      }
      if (withUsage) res.write(`data: ${JSON.stringify({ id: 'chatcmpl-bench', object: 'chat.completion.chunk', created: 1, model: 'bench', choices: [], usage: { prompt_tokens: 12, completion_tokens: chunks, total_tokens: 12 + chunks } })}\n\n`);
      res.end('data: [DONE]\n\n');
    });
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  server.keepAliveTimeout = 60_000;
  return { origin: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(resolve); }) };
}

/** One POST with a kept-alive connection; resolves when the whole answer has been read. */
function post(agent, url, headers, body) {
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      let n = 0;
      res.on('data', () => n++);
      res.on('end', () => resolve(n));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** Median ms of `n` sequential requests (after a warm-up), `rounds` times; the median round. */
async function timeRequests(send, n, rounds = 5) {
  for (let i = 0; i < 50; i++) await send();
  const perRound = [];
  for (let r = 0; r < rounds; r++) {
    const t = performance.now();
    for (let i = 0; i < n; i++) await send();
    perRound.push((performance.now() - t) / n);
  }
  return median(perRound);
}

/**
 * Added latency of the gateway: per non-streamed request, and per chunk of a stream (the chat
 * stream whose usage the gateway asks for and takes out again: its heaviest path), both against
 * the same upstream called directly, in this process.
 */
export async function gatewayLatency({ requests = 300, chunks = 200, streams = 20, dir = null } = {}) {
  const upstream = await benchUpstream({ chunks });
  const gateway = new Gateway({ env: {}, upstreams: { openai: { baseUrl: `${upstream.origin}/v1`, apiKey: 'sk-bench' } } });
  // Recorded as in a rollout: trace events and, given a folder, models.jsonl.
  const log = new ModelLog(new Trace(null), dir === null ? null : join(dir, 'models.jsonl'));
  const grant = await gateway.open({ providers: ['openai'], limits: { maxModelRequests: Number.MAX_SAFE_INTEGER }, log, taskId: 'bench', trial: 0 });
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const json = JSON.stringify({ model: 'bench', messages: [{ role: 'user', content: 'hi' }] });
  const streamed = JSON.stringify({ model: 'bench', stream: true, messages: [{ role: 'user', content: 'hi' }] });
  const direct = `${upstream.origin}/v1/chat/completions`;
  const through = `${grant.env.OPENAI_BASE_URL}/chat/completions`;
  const auth = { authorization: `Bearer ${grant.env.OPENAI_API_KEY}` };
  const directMs = await timeRequests(() => post(agent, direct, {}, json), requests);
  const gatewayMs = await timeRequests(() => post(agent, through, auth, json), requests);
  const directStreamMs = await timeRequests(() => post(agent, direct, {}, streamed), streams, 3);
  const gatewayStreamMs = await timeRequests(() => post(agent, through, auth, streamed), streams, 3);
  agent.destroy();
  await grant.session.close();
  await log.close();
  await gateway.close();
  await upstream.close();
  return {
    directMs,
    gatewayMs,
    addedMsPerRequest: gatewayMs - directMs,
    chunks,
    directStreamMs,
    gatewayStreamMs,
    addedMsPerChunk: (gatewayStreamMs - directStreamMs) / chunks,
  };
}

/** A full garbage collection, so that heap sizes compare (without --expose-gc too). */
function collect() {
  if (!globalThis.gc) {
    setFlagsFromString('--expose-gc');
    globalThis.gc = runInNewContext('gc');
  }
  globalThis.gc();
}

/**
 * The gateway's memory under 256 clients streaming at once (no workers: only the gateway's part):
 * `rounds` rounds of 256 sessions, each making `requests` streamed requests of `chunks` chunks 10
 * ms apart; the host's heap after each round (after a collection when --expose-gc allows one).
 */
export async function gatewayMemory({ clients = 256, requests = 5, chunks = 20, rounds = 3 } = {}) {
  const upstream = await benchUpstream({ chunks, gapMs: 10 });
  const gateway = new Gateway({ env: {}, upstreams: { openai: { baseUrl: `${upstream.origin}/v1`, apiKey: 'sk-bench' } }, concurrency: clients });
  const agent = new Agent({ keepAlive: true, maxSockets: clients });
  const body = JSON.stringify({ model: 'bench', stream: true, messages: [{ role: 'user', content: 'hi' }] });
  const heapMb = [];
  let peakRss = 0;
  const sample = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 20);
  const t = performance.now();
  let failed = 0;
  for (let round = 0; round < rounds; round++) {
    await Promise.all(
      Array.from({ length: clients }, async () => {
        const grant = await gateway.open({ providers: ['openai'], limits: { maxModelRequests: requests }, log: new ModelLog(new Trace(null), null), taskId: 'bench', trial: 0 });
        for (let i = 0; i < requests; i++) {
          await post(agent, `${grant.env.OPENAI_BASE_URL}/chat/completions`, { authorization: `Bearer ${grant.env.OPENAI_API_KEY}` }, body).catch(() => failed++);
        }
        await grant.session.close();
      }),
    );
    collect();
    heapMb.push(process.memoryUsage().heapUsed / 2 ** 20);
  }
  const wallMs = (performance.now() - t) / rounds;
  clearInterval(sample);
  agent.destroy();
  await gateway.close();
  await upstream.close();
  return { clients, requests, chunks, failed, wallMsPerRound: wallMs, heapMbAfterRounds: heapMb, peakRssMb: peakRss / 2 ** 20 };
}
