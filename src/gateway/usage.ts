/**
 * Token usage read off the provider's responses, as they pass through the gateway: from the JSON
 * body of a response, or from the events of a stream (each protocol says it differently). The
 * numbers come from the upstream, not the agent; they are still checked (non-negative integers,
 * capped) since a compatible server may send anything.
 */
import { USAGE_MAX_PER_REPORT } from '../options.js';
import type { Endpoint, Provider } from './providers.js';
import type { SseEvent } from './sse.js';

/** Tokens of one model request. */
export interface TokenCounts {
  inputTokens: number;
  outputTokens: number;
}

/** A count from a response: a non-negative integer up to USAGE_MAX_PER_REPORT, else 0. */
function count(value: unknown): number {
  return typeof value === 'number' && Number.isInteger(value) && value >= 0 ? Math.min(value, USAGE_MAX_PER_REPORT) : 0;
}

type Json = Record<string, unknown>;
const object = (value: unknown): Json | null => (typeof value === 'object' && value !== null && !Array.isArray(value) ? (value as Json) : null);

/** OpenAI Chat Completions names them prompt/completion; Responses and Anthropic input/output. */
function fromUsage(usage: Json | null, provider: Provider): TokenCounts | null {
  if (!usage) return null;
  if (provider === 'anthropic') {
    // Cached and cache-writing input tokens are input too (Anthropic counts them apart).
    const input = count(usage.input_tokens) + count(usage.cache_creation_input_tokens) + count(usage.cache_read_input_tokens);
    return { inputTokens: input, outputTokens: count(usage.output_tokens) };
  }
  if ('prompt_tokens' in usage || 'completion_tokens' in usage) return { inputTokens: count(usage.prompt_tokens), outputTokens: count(usage.completion_tokens) };
  return { inputTokens: count(usage.input_tokens), outputTokens: count(usage.output_tokens) };
}

/** The usage of a whole (not streamed) response body, or null when it has none. */
export function usageOfBody(provider: Provider, body: unknown): TokenCounts | null {
  return fromUsage(object(object(body)?.usage), provider);
}

/** Reads usage from a stream's events as they pass; `usage` is what has been seen so far. */
export class StreamUsage {
  readonly #provider: Provider;
  readonly #endpoint: Endpoint;
  #usage: TokenCounts | null = null;

  constructor(provider: Provider, endpoint: Endpoint) {
    this.#provider = provider;
    this.#endpoint = endpoint;
  }

  get usage(): TokenCounts | null {
    return this.#usage;
  }

  take(event: SseEvent): void {
    // Only events that mention usage are parsed: most of a stream is small deltas.
    if (!event.data.includes('usage')) return;
    let data: Json | null;
    try {
      data = object(JSON.parse(event.data));
    } catch {
      return;
    }
    if (!data) return;
    if (this.#provider === 'anthropic') {
      if (data.type === 'message_start') {
        this.#usage = fromUsage(object(object(data.message)?.usage), 'anthropic');
      } else if (data.type === 'message_delta') {
        // output_tokens is cumulative; newer servers repeat the input counts here too.
        const delta = object(data.usage);
        if (!delta) return;
        const input = 'input_tokens' in delta ? fromUsage(delta, 'anthropic')!.inputTokens : (this.#usage?.inputTokens ?? 0);
        this.#usage = { inputTokens: Math.max(input, this.#usage?.inputTokens ?? 0), outputTokens: count(delta.output_tokens) };
      }
      return;
    }
    if (this.#endpoint === 'responses') {
      const usage = fromUsage(object(object(data.response)?.usage), 'openai');
      if (usage) this.#usage = usage;
      return;
    }
    const usage = fromUsage(object(data.usage), 'openai');
    if (usage) this.#usage = usage;
  }
}

/**
 * OpenAI Chat Completions streams carry usage only when the request asks for it
 * (`stream_options.include_usage`). The gateway asks for it when the agent did not, and takes out
 * of the stream what asking added: the last chunk (no choices, only usage) and the `usage: null`
 * of every other chunk. The agent receives the chunks it would have received.
 */
export function withoutAddedUsage(event: SseEvent): string {
  if (!event.data.includes('"usage"')) return event.raw;
  let data: Json | null;
  try {
    data = object(JSON.parse(event.data));
  } catch {
    return event.raw;
  }
  if (!data || !('usage' in data)) return event.raw;
  if (Array.isArray(data.choices) && data.choices.length === 0 && data.usage !== null) return '';
  const { usage: _added, ...rest } = data;
  const end = event.raw.search(/(\r\n|\n|\r)(\r\n|\n|\r)$/);
  return `data: ${JSON.stringify(rest)}${end < 0 ? '\n\n' : event.raw.slice(end)}`;
}

/** Whether a Chat Completions request asks for usage in its stream already. */
export function asksForStreamUsage(body: Json): boolean {
  return object(body.stream_options)?.include_usage === true;
}
