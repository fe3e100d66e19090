/**
 * Which of a model request's failures are the provider's, not the caller's (ModelCall
 * upstreamFailure): an answer refusing the host's key or failing after the tries, an error event in
 * a stream. A run whose agent met one and did not pass is a `model_error` (see rollout.ts).
 */
import { PROVIDER_SPECS, type Provider } from './providers.js';
import type { SseEvent } from './sse.js';

/**
 * Why an answer of the provider's is a failure on its side (ModelCall.upstreamFailure), or
 * undefined: a refusal of the host's key (401, 403), the account's quota or credit (402, or a 429
 * or 400 saying so), or a 408, 409, 429 or 5xx (the last the upstream got: it tries those again
 * while it may). Another 400, a 404 or a 422 answers what the caller sent.
 */
export function failedAnswer(provider: Provider, status: number, body: Buffer | null): string | undefined {
  const said = body === null ? undefined : providerMessage(body);
  // A 429 for one request too large for the model's limits answers what the caller sent.
  if (status === 429 && said !== undefined && TOO_LARGE.test(said)) return undefined;
  const billing = said !== undefined && /quota|billing|credit balance/i.test(said);
  const advice =
    status === 401 || status === 403
      ? `check ${PROVIDER_SPECS[provider].env.apiKey} on this machine`
      : status === 402 || ((status === 429 || status === 400) && billing)
        ? "the provider refused for the account's quota: check its plan and billing"
        : status === 429
          ? 'the provider kept refusing for its rate limit: lower --model-concurrency, or try later'
          : status === 408 || status === 409 || status >= 500
            ? 'the provider kept failing: try again later'
            : undefined;
  if (advice === undefined) return undefined;
  return `the ${provider} upstream answered ${status}${said === undefined ? '' : ` (${said})`}: ${advice}`;
}

/** A provider's words for a request over the model's limits (OpenAI answers such a request 429). */
const TOO_LARGE = /request too large|too many tokens|context length|maximum context/i;

/** The message of a provider's JSON error (`error.message`, or `message`), one line, clipped. */
function providerMessage(body: Buffer): string | undefined {
  if (body.length > 64 * 1024) return undefined;
  try {
    const json = JSON.parse(body.toString('utf8')) as { error?: { message?: unknown } | string; message?: unknown };
    const message = typeof json.error === 'string' ? json.error : (json.error?.message ?? json.message);
    if (typeof message !== 'string' || message.trim() === '') return undefined;
    const line = message.replace(/\s+/g, ' ').trim();
    return line.length > 200 ? `${line.slice(0, 199)}…` : line;
  } catch {
    return undefined;
  }
}

/** Kinds of stream errors that are the provider's failing, not what the caller asked (an allowlist). */
const PROVIDER_SIDE = /^(server_error|api_error|overloaded_error|internal_error|service_unavailable|timeout|rate_limit)/;

/**
 * What an error event in a stream says, if the event is the provider failing (Anthropic's `error`
 * event, an OpenAI Responses `response.failed` or `error` event, a Chat Completions chunk that is an
 * `error` object, of a kind in PROVIDER_SIDE); undefined otherwise: an error about the request
 * (invalid, too large, a policy) is the caller's, and one of no known kind is not counted.
 */
export function streamErrorOf(event: SseEvent): string | undefined {
  if (event.event !== 'error' && event.event !== 'response.failed' && !event.data.includes('"error"')) return undefined;
  let json: { type?: unknown; code?: unknown; error?: unknown; response?: { error?: unknown } };
  try {
    json = JSON.parse(event.data) as typeof json;
  } catch {
    return undefined;
  }
  const flat = json.type === 'error' && json.error === undefined;
  const error = (json.type === 'response.failed' ? json.response?.error : flat ? json : json.error) as { type?: unknown; code?: unknown; message?: unknown } | null | undefined;
  if (error === undefined || error === null || typeof error !== 'object') return undefined;
  if (!flat && json.type !== undefined && json.type !== 'error' && json.type !== 'response.failed') return undefined;
  const kind = flat ? error.code : (error.type ?? error.code);
  if (typeof kind !== 'string' || !PROVIDER_SIDE.test(kind)) return undefined;
  const message = typeof error.message === 'string' && error.message.trim() !== '' ? error.message : kind;
  const line = message.replace(/\s+/g, ' ').trim();
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}
