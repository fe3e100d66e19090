/**
 * One model request from start to end, whoever makes it: the agent through the gateway's HTTP
 * server, or Silo on the host (see call.ts). The cache is looked up first; otherwise the request
 * goes upstream and the answer is written to the caller as it arrives, chunk by chunk, while a
 * copy is read for its usage (a stream's events, or the JSON body at its end), kept for
 * models.jsonl and, when whole and successful, stored in the cache. Then it is recorded.
 */
import type { IncomingMessage } from 'node:http';
import { performance } from 'node:perf_hooks';
import { describeError } from '../errors.js';
import { round } from '../rollout/trace.js';
import { cacheKeyHash, requestIdentity, type Actor, type CacheKey, type ModelCache } from './cache.js';
import { BodyCapture, type ModelCall, type ModelLog } from './record.js';
import { PROVIDER_SPECS, type Routed } from './providers.js';
import { failedAnswer, streamErrorOf } from './failures.js';
import { SseReader, type SseEvent } from './sse.js';
import { UpstreamError, type Upstream } from './upstream.js';
import { asksForStreamUsage, StreamUsage, usageOfBody, withoutAddedUsage } from './usage.js';

/** Where a response goes: the agent's HTTP response, or a buffer on the host. */
export interface Sink {
  head(status: number, headers: Record<string, string>): void;
  /** Resolves when the receiver can take more (or at once). */
  write(chunk: Buffer | string): Promise<void> | void;
  /** Ends the response, with its last (or only) chunk. */
  end(last?: Buffer | string): void;
  /** Ends the response before its end (it was cut off): the receiver sees the connection drop. */
  abort(): void;
  /** The receiver went away before the end. */
  readonly gone: boolean;
}

/** What an exchange needs around it. */
export interface ExchangeContext {
  upstream: Upstream;
  cache: ModelCache | null;
  log: ModelLog;
  taskId: string | null;
  trial: number | null;
  /** Counts the occurrences of a request within its rollout (see ModelSession.occurrence). */
  occurrence(identity: string): number;
  /** Bytes of one response, at most; a longer one is cut off (the caller sees the connection end). */
  maxResponseBytes: number;
}

/** One request. */
export interface ExchangeRequest {
  actor: Actor;
  routed: Routed;
  /** The body as sent (POST), and its JSON. */
  raw: Buffer | null;
  json: Record<string, unknown> | null;
  /** Headers to send upstream (chosen by the caller; never credentials). */
  headers: Record<string, string>;
  signal: AbortSignal;
  /** When the request arrived (performance.now()). */
  startedAt: number;
}

/** Response headers passed on to the caller; the rest (cookies, the upstream's internals) are not. */
const PASSED_HEADERS = ['content-type', 'content-encoding', 'request-id', 'x-request-id', 'openai-processing-ms'];

/** A JSON error in a shape both SDKs read (`error.message`), sent when the gateway answers itself. */
export function errorBody(type: string, message: string, extra: Record<string, unknown> = {}): string {
  return JSON.stringify({ type: 'error', error: { type, code: type, message, ...extra } });
}

/**
 * Headers of an answer the caller should not try again: the gateway tried already (or the answer
 * is final), and an agent's SDK retrying on its own would multiply the load.
 */
export const NO_RETRY = { 'x-should-retry': 'false' };

/** Runs one request to its end and records it; never rejects. */
export async function exchange(ctx: ExchangeContext, req: ExchangeRequest, sink: Sink): Promise<ModelCall> {
  const { routed } = req;
  const requestId = ctx.log.nextRequestId();
  const model = typeof req.json?.model === 'string' ? req.json.model : null;
  const stream = req.json?.stream === true;
  const requestCapture = new BodyCapture();
  if (req.raw) requestCapture.add(req.raw);
  const responseCapture = new BodyCapture();
  const call: ModelCall = {
    requestId,
    actor: req.actor,
    provider: routed.provider,
    endpoint: routed.endpoint,
    model,
    stream,
    status: null,
    durationMs: 0,
    queuedMs: 0,
    usage: { inputTokens: 0, outputTokens: 0 },
  };
  const finish = (json: boolean): ModelCall => {
    call.durationMs = round(performance.now() - req.startedAt);
    call.queuedMs = round(call.queuedMs);
    ctx.log.record(call, requestCapture, responseCapture, json);
    return call;
  };

  // The cache: the same request, in the same task, trial and place in the rollout.
  let cacheKey: CacheKey | null = null;
  let cacheHash = '';
  if (ctx.cache) {
    const identity = { actor: req.actor, provider: routed.provider, endpoint: routed.endpoint, path: routed.upstreamPath, body: req.json };
    cacheKey = { ...identity, taskId: ctx.taskId, trial: ctx.trial, occurrence: ctx.occurrence(requestIdentity(identity)) };
    cacheHash = cacheKeyHash(cacheKey);
    const hit = ctx.cache.reads ? await ctx.cache.get(cacheHash) : null;
    if (hit) {
      call.status = hit.status;
      call.cached = true;
      call.usage = hit.usage ?? { inputTokens: 0, outputTokens: 0 };
      sink.head(hit.status, { 'content-type': hit.contentType ?? 'application/json', 'content-length': String(Buffer.byteLength(hit.body)), ...(hit.status >= 400 ? NO_RETRY : {}) });
      sink.end(hit.body);
      responseCapture.add(hit.body);
      return finish(isJson(hit.contentType));
    }
  }

  // OpenAI chat streams carry usage only when asked: ask, and take out what asking adds.
  const addUsage = routed.endpoint === 'chat/completions' && stream && req.json !== null && !asksForStreamUsage(req.json);
  const body = addUsage ? Buffer.from(JSON.stringify({ ...req.json, stream_options: { ...(req.json!.stream_options as object | undefined), include_usage: true } })) : req.raw;

  let response;
  try {
    response = await ctx.upstream.send({ provider: routed.provider, method: routed.method, path: routed.upstreamPath, headers: req.headers, body, signal: req.signal });
  } catch (err) {
    const e = err instanceof UpstreamError ? err : new UpstreamError(describeError(err), { aborted: req.signal.aborted, queuedMs: 0, retries: 0 });
    call.queuedMs = e.queuedMs;
    if (e.retries) call.retries = e.retries;
    call.error = e.aborted ? `aborted: ${describeError(req.signal.reason ?? 'the caller went away')}` : e.message;
    if (!e.aborted) call.upstreamFailure = `${e.message}: check ${PROVIDER_SPECS[routed.provider].env.baseUrl} and that the server is up`;
    if (!e.aborted && !sink.gone) {
      call.status = 502;
      const text = errorBody('upstream_unavailable', `silo gateway: ${e.message}`);
      sink.head(502, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), ...NO_RETRY });
      sink.end(text);
      responseCapture.add(text);
    }
    return finish(true);
  }
  call.queuedMs = response.queuedMs;
  if (response.retries) call.retries = response.retries;
  call.status = response.status;
  const contentType = String(response.headers['content-type'] ?? '');
  const sse = contentType.includes('text/event-stream');
  const headers: Record<string, string> = {};
  for (const name of PASSED_HEADERS) {
    const value = response.headers[name];
    if (typeof value === 'string') headers[name] = value;
  }
  if (response.status >= 400) Object.assign(headers, NO_RETRY);
  const cacheable = complete2xx(response.status) && ctx.cache?.writes === true && cacheKey !== null;

  if (!sse) {
    // A whole answer (JSON): read to its end, then sent at once with its length.
    const read = await readAll(response.body, ctx.maxResponseBytes, req.signal);
    if ('error' in read) {
      call.error = read.error;
      if (read.brokeOff && !req.signal.aborted) call.upstreamFailure = `the ${routed.provider} upstream's ${read.error.replace(/^the /, '')}`;
      if (read.overCap && !sink.gone) {
        // Nothing was sent yet: the caller is told why, not left with a dropped connection.
        call.status = 502;
        const text = errorBody('response_too_large', `silo gateway: ${read.error}; ask the model for less`);
        sink.head(502, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(text)), ...NO_RETRY });
        sink.end(text);
        responseCapture.add(text);
      } else if (!sink.gone) sink.abort();
      return finish(true);
    }
    const body = read.body;
    const failed = failedAnswer(routed.provider, response.status, body);
    if (failed !== undefined) call.upstreamFailure = failed;
    sink.head(response.status, { ...headers, 'content-length': String(body.length) });
    sink.end(body);
    responseCapture.add(body);
    try {
      const usage = usageOfBody(routed.provider, JSON.parse(body.toString('utf8')));
      if (usage) call.usage = usage;
    } catch {
      // not JSON: no usage
    }
    if (cacheable) await ctx.cache!.put(cacheHash, cacheKey!, { status: response.status, contentType: contentType || null, body: body.toString('utf8'), usage: call.usage });
    return finish(isJson(contentType));
  }

  // A stream: each chunk goes on as it comes (after the events it completes, when the gateway
  // takes out the usage it asked for), and is read for its usage on the way.
  const failed = failedAnswer(routed.provider, response.status, null);
  if (failed !== undefined) call.upstreamFailure = failed;
  sink.head(response.status, headers);
  const reader = new SseReader();
  const streamUsage = new StreamUsage(routed.provider, routed.endpoint);
  const whole: Buffer[] = [];
  const relay = (chunk: Buffer | string): Promise<void> | void => {
    if (chunk.length === 0) return;
    responseCapture.add(chunk);
    if (cacheable) whole.push(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk);
    return sink.write(chunk);
  };
  /** An error event the provider put in the stream (overloaded, say), if any: the stream is no answer to keep. */
  let streamError: string | undefined;
  const take = (events: SseEvent[], data: Buffer | null): Promise<void> | void => {
    for (const event of events) {
      streamUsage.take(event);
      streamError ??= streamErrorOf(event);
    }
    if (addUsage) return relay(events.map(withoutAddedUsage).join(''));
    if (data) return relay(data);
  };
  const ended = await pump(response.body, ctx.maxResponseBytes, req.signal, (data) => take(reader.push(data), data), () => sink.gone);
  response.body.destroy();
  if (ended.error) {
    call.error = ended.error;
    if (ended.brokeOff && !req.signal.aborted) call.upstreamFailure ??= `the ${routed.provider} upstream's ${ended.error.replace(/^the /, '')}`;
    if (!sink.gone) sink.abort();
  } else {
    await take(reader.end(), null);
    sink.end();
  }
  if (streamError !== undefined) {
    call.error ??= `the stream carried an error: ${streamError}`;
    call.upstreamFailure ??= `the ${routed.provider} upstream's stream carried an error (${streamError}): the provider kept failing: try again later`;
  }
  if (streamUsage.usage) call.usage = streamUsage.usage;
  if (!ended.error && streamError === undefined && cacheable) {
    await ctx.cache!.put(cacheHash, cacheKey!, { status: response.status, contentType: contentType || null, body: Buffer.concat(whole).toString('utf8'), usage: streamUsage.usage });
  }
  return finish(false);
}

const complete2xx = (status: number): boolean => status >= 200 && status < 300;

/** Why a response did not come to its end, in words. */
function brokeOff(signal: AbortSignal, err: unknown): string {
  return signal.aborted ? `aborted: ${describeError(signal.reason ?? 'the caller went away')}` : `the response broke off: ${describeError(err ?? 'the connection closed')}`;
}

const overCap = (max: number): string => `the response was cut off at ${max} bytes (the gateway's cap)`;

/** How a response ended before its end: why, and whether it was too long or the connection broke (not by the caller). */
interface Ended {
  error: string;
  overCap?: true;
  brokeOff?: true;
}

/** A whole body, up to `max` bytes. */
function readAll(body: IncomingMessage, max: number, signal: AbortSignal): Promise<{ body: Buffer } | Ended> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    let bytes = 0;
    let done = false;
    const settle = (value: { body: Buffer } | Ended): void => {
      if (done) return;
      done = true;
      resolve(value);
    };
    body.on('data', (data: Buffer) => {
      bytes += data.length;
      if (bytes > max) {
        body.destroy();
        return settle({ error: overCap(max), overCap: true });
      }
      chunks.push(data);
    });
    body.once('end', () => settle({ body: chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks) }));
    body.once('error', (err) => settle({ error: brokeOff(signal, err), brokeOff: true }));
    body.once('close', () => settle({ error: brokeOff(signal, null), brokeOff: true }));
  });
}

/**
 * Feeds a stream's chunks to `take` as they come, pausing it while `take` waits (the caller reads
 * slowly); stops at `max` bytes or when `gone` says the caller left. Resolves at the end.
 */
function pump(
  body: IncomingMessage,
  max: number,
  signal: AbortSignal,
  take: (data: Buffer) => Promise<void> | void,
  gone: () => boolean,
): Promise<Partial<Ended>> {
  return new Promise((resolve) => {
    let bytes = 0;
    let done = false;
    let waiting: Promise<void> | null = null;
    const settle = (error?: string, broke = false): void => {
      if (done) return;
      done = true;
      body.destroy();
      resolve(error === undefined ? {} : { error, ...(broke ? { brokeOff: true as const } : {}) });
    };
    body.on('data', (data: Buffer) => {
      if (done) return;
      bytes += data.length;
      if (bytes > max) return settle(overCap(max));
      const wait = take(data);
      if (gone()) return settle('the caller closed the connection before the end of the response');
      if (wait) {
        body.pause();
        waiting = wait.then(() => {
          waiting = null;
          if (gone()) settle('the caller closed the connection before the end of the response');
          else if (!done) body.resume();
        });
      }
    });
    body.once('end', () => {
      // The last chunk's write may still be waiting on the caller: the end comes after it.
      void Promise.resolve(waiting).then(() => (done ? undefined : (done = true, resolve({}))));
    });
    // (Not the provider's doing when it came while the caller was not reading: it stopped.)
    body.once('error', (err) => settle(brokeOff(signal, err), waiting === null));
    body.once('close', () => {
      if (!body.readableEnded) settle(brokeOff(signal, null), waiting === null);
    });
  });
}

function isJson(contentType: string | null): boolean {
  return contentType === null || contentType.includes('json');
}
