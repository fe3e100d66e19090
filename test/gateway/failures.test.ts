/** Which failures of a model request are the provider's (a run that meets one and fails is a model_error), and which the caller's. */
import { describe, expect, it } from 'vitest';
import { failedAnswer, streamErrorOf } from '../../src/gateway/failures.js';
import type { SseEvent } from '../../src/gateway/sse.js';

const body = (value: unknown): Buffer => Buffer.from(JSON.stringify(value));
const event = (data: unknown, name: string | null = null): SseEvent => ({ event: name, data: JSON.stringify(data), raw: '' });

describe('answers', () => {
  it("count the host's key refused, the account's quota or credit, and 408/409/429/5xx; not what the caller sent", () => {
    expect(failedAnswer('openai', 401, body({ error: { message: 'Incorrect API key provided' } }))).toBe('the openai upstream answered 401 (Incorrect API key provided): check OPENAI_API_KEY on this machine');
    expect(failedAnswer('anthropic', 400, body({ type: 'error', error: { type: 'invalid_request_error', message: 'Your credit balance is too low to access the Anthropic API.' } }))).toBe(
      "the anthropic upstream answered 400 (Your credit balance is too low to access the Anthropic API.): the provider refused for the account's quota: check its plan and billing",
    );
    expect(failedAnswer('openai', 402, null)).toMatch(/answered 402: the provider refused for the account's quota/);
    expect(failedAnswer('openai', 529, null)).toBe('the openai upstream answered 529: the provider kept failing: try again later');
    expect(failedAnswer('openai', 429, body({ error: { message: 'Rate limit reached' } }))).toMatch(/lower --model-concurrency/);
    for (const [status, message] of [
      [400, "Invalid 'messages'"],
      [404, 'The model gpt-nope does not exist'],
      [422, 'bad'],
      [429, 'Request too large for gpt-4o on tokens per min (TPM): Limit 30000, Requested 90000.'],
    ] as const) {
      expect(failedAnswer('openai', status, body({ error: { message } })), `${status} ${message}`).toBeUndefined();
    }
  });
});

describe('error events in a stream', () => {
  it("count the provider failing (Anthropic's error event, Responses' response.failed and error events, a chat chunk that is an error)", () => {
    expect(streamErrorOf(event({ type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } }, 'error'))).toBe('Overloaded');
    expect(streamErrorOf(event({ type: 'response.failed', response: { error: { code: 'server_error', message: 'The server had an error' } } }, 'response.failed'))).toBe('The server had an error');
    expect(streamErrorOf(event({ type: 'error', code: 'server_error', message: 'boom' }, 'error'))).toBe('boom');
    expect(streamErrorOf(event({ error: { type: 'server_error', message: 'upstream died' } }))).toBe('upstream died');
  });

  it("leave errors about the request, unknown kinds and ordinary events alone", () => {
    for (const e of [
      event({ type: 'error', error: { type: 'invalid_request_error', message: 'prompt is too long' } }, 'error'),
      event({ type: 'error', error: { type: 'request_too_large', message: 'too large' } }, 'error'),
      event({ type: 'response.failed', response: { error: { code: 'context_length_exceeded', message: 'too long' } } }, 'response.failed'),
      event({ type: 'error', code: 'invalid_prompt', message: 'policy' }, 'error'),
      event({ error: { type: 'BadRequestError', code: 400, message: 'bad' } }),
      event({ type: 'response.completed', response: { error: null } }, 'response.completed'),
      event({ type: 'response.output_text.delta', delta: 'an "error" in the text' }, 'response.output_text.delta'),
      event({ id: 'c', object: 'chat.completion.chunk', choices: [{ delta: { content: 'error: none' } }] }),
      event({ type: 'ping' }, 'ping'),
    ]) {
      expect(streamErrorOf(e), e.data).toBeUndefined();
    }
  });
});
