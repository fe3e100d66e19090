/**
 * The model providers the gateway speaks for: where each one's requests arrive on the gateway,
 * which of them it forwards, where they go upstream (the host's `OPENAI_*` / `ANTHROPIC_*`
 * variables) and how the real key is put on them. Host side only.
 */
import { SiloError } from '../errors.js';

/** A provider an agent may be granted (`--provider`). */
export type Provider = 'openai' | 'anthropic';

export const PROVIDERS: readonly Provider[] = ['openai', 'anthropic'];

/** What a forwarded request is, as recorded (`model_call.endpoint`). */
export type Endpoint = 'chat/completions' | 'responses' | 'models' | 'messages';

/** A request the gateway forwards: its method and the path after the provider's prefix. */
interface Route {
  method: 'GET' | 'POST';
  /** Matches the path after the provider's prefix on the gateway. */
  path: RegExp;
  endpoint: Endpoint;
  /** The path upstream, after the upstream's base URL. */
  upstream(path: string): string;
}

/** One provider: its place on the gateway and upstream. */
export interface ProviderSpec {
  /** Where its requests arrive on the gateway: the agent's base URL is the gateway's origin and this. */
  prefix: string;
  /** The upstream when the host does not set one. */
  defaultBaseUrl: string;
  /** The host's variables naming the upstream, and the agent's (the same names). */
  env: { baseUrl: string; apiKey: string };
  routes: readonly Route[];
  /** The headers that carry the real key upstream. */
  auth(key: string): Record<string, string>;
}

const same = (path: string): string => path;

export const PROVIDER_SPECS: Readonly<Record<Provider, ProviderSpec>> = {
  // The OpenAI SDK's base URL ends in /v1 and request paths follow it (`/chat/completions`);
  // compatible servers (vLLM, Ollama, llama.cpp) are configured the same way.
  openai: {
    prefix: '/openai/v1',
    defaultBaseUrl: 'https://api.openai.com/v1',
    env: { baseUrl: 'OPENAI_BASE_URL', apiKey: 'OPENAI_API_KEY' },
    routes: [
      { method: 'POST', path: /^\/chat\/completions$/, endpoint: 'chat/completions', upstream: same },
      { method: 'POST', path: /^\/responses$/, endpoint: 'responses', upstream: same },
      { method: 'GET', path: /^\/models(\/[A-Za-z0-9._:@-]{1,200})?$/, endpoint: 'models', upstream: same },
    ],
    auth: (key) => ({ authorization: `Bearer ${key}` }),
  },
  // The Anthropic SDK's base URL is an origin and request paths start with /v1.
  anthropic: {
    prefix: '/anthropic',
    defaultBaseUrl: 'https://api.anthropic.com',
    env: { baseUrl: 'ANTHROPIC_BASE_URL', apiKey: 'ANTHROPIC_API_KEY' },
    routes: [{ method: 'POST', path: /^\/v1\/messages$/, endpoint: 'messages', upstream: same }],
    auth: (key) => ({ 'x-api-key': key }),
  },
};

/** A request as routed: its provider, what it is and where it goes upstream. */
export interface Routed {
  provider: Provider;
  endpoint: Endpoint;
  method: 'GET' | 'POST';
  /** The path after the upstream's base URL. */
  upstreamPath: string;
}

/** The route of a gateway request, or null when the gateway does not forward it. */
export function route(method: string, path: string): Routed | null {
  for (const provider of PROVIDERS) {
    const spec = PROVIDER_SPECS[provider];
    if (!path.startsWith(`${spec.prefix}/`)) continue;
    const rest = path.slice(spec.prefix.length);
    for (const r of spec.routes) {
      if (r.method === method && r.path.test(rest)) return { provider, endpoint: r.endpoint, method: r.method, upstreamPath: r.upstream(rest) };
    }
  }
  return null;
}

/** What the gateway forwards, for error messages. */
export const FORWARDED =
  'POST /openai/v1/chat/completions, POST /openai/v1/responses, GET /openai/v1/models[/<id>], POST /anthropic/v1/messages';

/** Where one provider's requests go: a base URL and the key put on them (none for local servers). */
export interface UpstreamConfig {
  baseUrl: string;
  apiKey?: string | undefined;
}

/** The upstream of each provider from the host's variables (the public endpoints by default). */
export function upstreamsFromEnv(env: NodeJS.ProcessEnv = process.env): Record<Provider, UpstreamConfig> {
  const out = {} as Record<Provider, UpstreamConfig>;
  for (const provider of PROVIDERS) {
    const spec = PROVIDER_SPECS[provider];
    const baseUrl = env[spec.env.baseUrl] || spec.defaultBaseUrl;
    out[provider] = { baseUrl: checkBaseUrl(baseUrl, spec.env.baseUrl), ...(env[spec.env.apiKey] ? { apiKey: env[spec.env.apiKey] } : {}) };
  }
  return out;
}

/** A base URL without its trailing slash; a usage error when it is not http(s). */
export function checkBaseUrl(value: string, name: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new SiloError('SILO_USAGE', `${name} is not a URL (${JSON.stringify(value).slice(0, 80)}); set it to the provider's base URL, e.g. ${name === 'OPENAI_BASE_URL' ? 'https://api.openai.com/v1' : 'https://api.anthropic.com'}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new SiloError('SILO_USAGE', `${name} must be an http:// or https:// URL (got ${url.protocol})`);
  return value.replace(/\/+$/, '');
}

/** Parses `--provider` values: each must be a known provider. */
export function checkProviders(values: readonly unknown[]): Provider[] {
  const out: Provider[] = [];
  for (const value of values) {
    if (!PROVIDERS.includes(value as Provider)) {
      throw new SiloError('SILO_USAGE', `unknown provider ${JSON.stringify(value)}; give ${PROVIDERS.join(' or ')}`);
    }
    if (!out.includes(value as Provider)) out.push(value as Provider);
  }
  return out;
}

/** The variables an agent granted `providers` gets: the gateway's URL for each, and the token as its key. */
export function agentVariables(providers: readonly Provider[], origin: string, token: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const provider of providers) {
    const spec = PROVIDER_SPECS[provider];
    env[spec.env.baseUrl] = `${origin}${spec.prefix}`;
    env[spec.env.apiKey] = token;
  }
  return env;
}

/** The names agentVariables sets for `providers`. */
export function variableNames(providers: readonly Provider[]): string[] {
  return providers.flatMap((p) => [PROVIDER_SPECS[p].env.baseUrl, PROVIDER_SPECS[p].env.apiKey]);
}
