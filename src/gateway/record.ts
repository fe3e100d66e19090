/**
 * What a run keeps of its model calls: a `model_call` event in the trace for each request when it
 * completes, and a line in `models.jsonl` (the run folder) with its request and response bodies,
 * each cut at MODEL_BODY_MAX_BYTES and marked when cut. Usage is added up per actor: the agent's
 * becomes run.json `usage` (source "gateway"), Silo's own calls on the host (a simulated user)
 * another total. Nothing here throws: a file that cannot be written is skipped (the trace stays).
 */
import { AppendFile } from '../rollout/append-file.js';
import type { Trace } from '../rollout/trace.js';
import { toJsonLine } from '../rollout/trace.js';
import { MiB, USAGE_MAX_TOTAL } from '../options.js';
import type { Actor } from './cache.js';
import type { Endpoint, Provider } from './providers.js';
import type { TokenCounts } from './usage.js';

/** Bytes of one request or response body kept in models.jsonl. */
export const MODEL_BODY_MAX_BYTES = MiB;

/** Bytes of bodies one run's models.jsonl holds at most; past them, lines keep no bodies. */
export const MODEL_LOG_MAX_BYTES = 64 * MiB;

/** One model request, as the trace records it. */
export interface ModelCall {
  requestId: number;
  actor: Actor;
  provider: Provider;
  endpoint: Endpoint;
  /** The request's `model`, when it names one. */
  model: string | null;
  stream: boolean;
  /** The HTTP status the caller received; null when no answer came. */
  status: number | null;
  durationMs: number;
  /** Waiting for a slot upstream and between tries, ms. */
  queuedMs: number;
  usage: TokenCounts;
  /** Replayed from the model cache: no upstream request was made. */
  cached?: boolean;
  /** Tries after the first (429, 5xx, lost connections). */
  retries?: number;
  /** Why the request failed or was refused. */
  error?: string;
  /**
   * Why it failed on the provider's side, not by anything the caller sent: no answer after the
   * tries, an answer refusing the host's key (401, 403), a 408, 409, 429 or 5xx once the tries were
   * spent, or a response that broke off. Not written as such (its status and error say it): a
   * run whose agent met one and did not pass is an error, `model_error` (see ModelLog.failure).
   */
  upstreamFailure?: string;
}

/** Totals of one actor's model requests. */
export interface ModelUsage {
  inputTokens: number;
  outputTokens: number;
  requests: number;
  /** Requests answered from the model cache. */
  cachedRequests: number;
}

/** A body as it passes, kept up to MODEL_BODY_MAX_BYTES. */
export class BodyCapture {
  readonly #chunks: Buffer[] = [];
  #kept = 0;
  /** Bytes seen in all. */
  bytes = 0;

  add(chunk: Buffer | string): void {
    const buf = typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk;
    this.bytes += buf.length;
    if (this.#kept >= MODEL_BODY_MAX_BYTES) return;
    const take = buf.subarray(0, MODEL_BODY_MAX_BYTES - this.#kept);
    this.#chunks.push(take);
    this.#kept += take.length;
  }

  get truncated(): boolean {
    return this.bytes > this.#kept;
  }

  /** The body as text (cut at a character boundary when cut). */
  text(): string {
    const buf = Buffer.concat(this.#chunks);
    // A cut UTF-8 sequence at the end decodes as U+FFFD: drop it.
    const text = buf.toString('utf8');
    return this.truncated ? text.replace(/\uFFFD$/, '') : text;
  }

  /** What models.jsonl holds: parsed JSON when the body is whole JSON, else its text; null when empty. */
  value(json: boolean): unknown {
    if (this.bytes === 0) return null;
    const text = this.text();
    if (json && !this.truncated) {
      try {
        return JSON.parse(text) as unknown;
      } catch {
        // not JSON after all: kept as text
      }
    }
    return text;
  }
}

/** The model calls of one run. */
export class ModelLog {
  readonly #trace: Trace;
  readonly #path: string | null;
  /** Opened with the first line: a run without model calls has no models.jsonl. */
  #file: AppendFile | null = null;
  #nextId = 1;
  #bodyBytes = 0;
  readonly #usage = new Map<Actor, ModelUsage>();
  /**
   * Each actor's failures on the provider's side (ModelCall.upstreamFailure) since its last request
   * that did not fail so: the first of them. A request answered whole later clears it (the actor
   * got past it); one aborted or cut off on the way leaves it as it is.
   */
  readonly #failures = new Map<Actor, string>();

  /** What models.jsonl waits for before it is opened: its folder being made (see AppendFile). */
  readonly #after: Promise<unknown> | undefined;

  /** `file` null keeps no models.jsonl (the trace events are still recorded). `after`: see #after. */
  constructor(trace: Trace, file: string | null, after?: Promise<unknown>) {
    this.#trace = trace;
    this.#path = file;
    this.#after = after;
  }

  /** A new request's id (1, 2, ... within the run). */
  nextRequestId(): number {
    return this.#nextId++;
  }

  /**
   * Why `actor`'s requests failed on the provider's side (no answer, the host's key refused, a 408,
   * 409, 429 or 5xx after the tries, a response that broke off), when its last answered request
   * did: the first of those since it last got an answer. Undefined when it did not.
   */
  failure(actor: Actor): string | undefined {
    return this.#failures.get(actor);
  }

  /** The usage of `actor`'s requests, or undefined when it made none. */
  usage(actor: Actor): ModelUsage | undefined {
    const u = this.#usage.get(actor);
    return u && { ...u };
  }

  /**
   * Records a completed request: its trace event and its models.jsonl line. `counted` false: the
   * gateway refused it (a limit), so it is not one of the requests in the usage.
   */
  record(call: ModelCall, request: BodyCapture | null, response: BodyCapture | null, responseIsJson: boolean, counted = true): void {
    if (counted) {
      const total = this.#usage.get(call.actor) ?? { inputTokens: 0, outputTokens: 0, requests: 0, cachedRequests: 0 };
      total.inputTokens = Math.min(USAGE_MAX_TOTAL, total.inputTokens + call.usage.inputTokens);
      total.outputTokens = Math.min(USAGE_MAX_TOTAL, total.outputTokens + call.usage.outputTokens);
      total.requests++;
      if (call.cached) total.cachedRequests++;
      this.#usage.set(call.actor, total);
      if (call.upstreamFailure !== undefined) {
        if (!this.#failures.has(call.actor)) this.#failures.set(call.actor, call.upstreamFailure);
      } else if (call.status !== null && call.error === undefined) {
        // (answered whole: one aborted or cut off on the way says nothing either way)
        this.#failures.delete(call.actor);
      }
    }

    const event = this.#trace.add({
      type: 'model_call',
      requestId: call.requestId,
      ...(call.actor === 'agent' ? {} : { actor: call.actor }),
      provider: call.provider,
      endpoint: call.endpoint,
      model: call.model,
      stream: call.stream,
      status: call.status,
      durationMs: call.durationMs,
      queuedMs: call.queuedMs,
      usage: call.usage,
      ...(call.cached ? { cached: true } : {}),
      ...(call.retries ? { retries: call.retries } : {}),
      ...(call.error === undefined ? {} : { error: call.error }),
    });
    if (this.#path === null) return;
    this.#file ??= new AppendFile(this.#path, this.#after ? { after: this.#after } : {});
    const kept = Math.min(MODEL_BODY_MAX_BYTES, request?.bytes ?? 0) + Math.min(MODEL_BODY_MAX_BYTES, response?.bytes ?? 0);
    const withBodies = this.#bodyBytes + kept <= MODEL_LOG_MAX_BYTES;
    if (withBodies) this.#bodyBytes += kept;
    const line = {
      requestId: call.requestId,
      seq: event.seq,
      actor: call.actor,
      provider: call.provider,
      endpoint: call.endpoint,
      model: call.model,
      stream: call.stream,
      status: call.status,
      usage: call.usage,
      ...(call.cached ? { cached: true } : {}),
      ...(call.error === undefined ? {} : { error: call.error }),
      requestBytes: request?.bytes ?? 0,
      responseBytes: response?.bytes ?? 0,
      ...(withBodies
        ? {
            request: request?.value(true) ?? null,
            ...(request?.truncated ? { requestTruncated: true } : {}),
            response: response?.value(responseIsJson) ?? null,
            ...(response?.truncated ? { responseTruncated: true } : {}),
          }
        : { bodiesOmitted: `this run's models.jsonl reached ${MODEL_LOG_MAX_BYTES / MiB} MiB of bodies` }),
    };
    this.#file.append(`${toJsonLine(line)}\n`);
  }

  /** Flushes and closes models.jsonl. Never rejects. */
  async close(): Promise<void> {
    await this.#file?.close();
  }
}
