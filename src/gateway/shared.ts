/**
 * Which gateway a rollout uses: the one its command made for all its rollouts (one cap on
 * requests in flight, one cache), or a process-wide one for rollouts given none. The gateway's
 * modules are loaded when one is made: most rollouts reach no model through it.
 */
import { resolve } from 'node:path';
import { parseBuiltinAgent, requireAgentSdk } from '../agents/builtin.js';
import { SiloError } from '../errors.js';
import type { CacheMode } from './cache.js';
import type { Gateway } from './gateway.js';
import type { Provider } from './providers.js';

/**
 * The gateway a command makes for its rollouts, or null when its agent reaches no model through
 * one (no `--provider`, not a built-in agent).
 */
export async function gatewayFor(
  agent: string,
  providers: readonly Provider[],
  options: { modelConcurrency?: number | undefined; modelCache?: string | undefined; modelCacheMode?: CacheMode | undefined; user?: string | undefined },
): Promise<Gateway | null> {
  // An LLM user (`--user`) calls its model through the gateway's upstream too.
  if (providers.length === 0 && !/^(openai|anthropic):/.test(agent) && options.user === undefined) {
    const given = [options.modelCache === undefined ? '' : '--model-cache', options.modelConcurrency === undefined ? '' : '--model-concurrency'].filter(Boolean);
    if (given.length > 0) throw new SiloError('SILO_USAGE', `${given.join(' and ')} apply to model calls through the gateway; grant the agent a provider with --provider openai|anthropic (or use a built-in agent)`);
    return null;
  }
  const { Gateway } = await import('./gateway.js');
  return new Gateway({
    ...(options.modelConcurrency === undefined ? {} : { concurrency: options.modelConcurrency }),
    ...(options.modelCache === undefined ? {} : { cache: { dir: resolve(options.modelCache), ...(options.modelCacheMode ? { mode: options.modelCacheMode } : {}) } }),
  });
}

/**
 * Before a command's rollouts run here (not on a queue's workers, which have SDKs and keys of
 * their own): a built-in agent whose SDK is missing is its one-line usage error, and a provider the
 * shell has no key for is said once, now, before any progress line is drawn.
 */
export function checkModelAccess(gateway: Gateway, agent: string, providers: readonly Provider[], user: string | undefined): void {
  const builtin = parseBuiltinAgent(agent);
  if (builtin) requireAgentSdk(builtin);
  const used = new Set<Provider>(providers);
  for (const model of [agent, user ?? '']) {
    const provider = /^(openai|anthropic):/.exec(model)?.[1] as Provider | undefined;
    if (provider) used.add(provider);
  }
  for (const provider of used) gateway.upstream.checkKey(provider);
}

const shared = new Map<string, Promise<Gateway>>();

/**
 * The process-wide gateway of rollouts given none (one per model cache), made on first use with
 * the upstreams of this process's environment. It does not keep the process alive.
 */
export function sharedGateway(cache?: { dir: string; mode?: CacheMode }): Promise<Gateway> {
  const key = cache ? `${resolve(cache.dir)}\u0000${cache.mode ?? 'readwrite'}` : '';
  let gateway = shared.get(key);
  if (!gateway) {
    gateway = import('./gateway.js').then(({ Gateway }) => new Gateway(cache ? { cache: { dir: resolve(cache.dir), ...(cache.mode ? { mode: cache.mode } : {}) } } : {}));
    shared.set(key, gateway);
    // One that could not be made (a cache folder not there yet, say) is made again next time.
    const made = gateway;
    made.catch(() => {
      if (shared.get(key) === made) shared.delete(key);
    });
  }
  return gateway;
}
