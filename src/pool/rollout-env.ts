/**
 * The variables of one rollout (its gateway URL and token) on top of its worker's environment.
 * A worker's start environment is fixed for its pool, so they travel with the rollout's task and
 * are set here, in the worker, before the agent loads. A single-use worker simply sets them in
 * its `process.env` (a copy of its own: threads do not share it). A reused worker runs several
 * rollouts at once, so there `process.env` becomes a view that shows each rollout its own values
 * (found through the async context the rollout's code runs in). Runs in agent workers.
 */
import { AsyncLocalStorage } from 'node:async_hooks';

type Env = Readonly<Record<string, string>>;

const current = new AsyncLocalStorage<Env>();
let viewInstalled = false;

/** Runs `fn` (which loads and calls the agent) with `env` set; `shared`: the thread runs other rollouts too. */
export function withRolloutEnv<T>(env: Env | undefined, shared: boolean, fn: () => T): T {
  if (!env || Object.keys(env).length === 0) return fn();
  if (!shared) {
    for (const [name, value] of Object.entries(env)) process.env[name] = value;
    return fn();
  }
  installView();
  return current.run({ ...env }, fn);
}

/** process.env as each rollout of a reused worker sees it: its own values over the thread's. */
function installView(): void {
  if (viewInstalled) return;
  viewInstalled = true;
  const base = process.env;
  const own = (key: string | symbol): Env | undefined => {
    const env = typeof key === 'string' ? current.getStore() : undefined;
    return env && Object.hasOwn(env, key) ? env : undefined;
  };
  process.env = new Proxy(base, {
    get: (target, key) => own(key)?.[key as string] ?? Reflect.get(target, key),
    has: (target, key) => own(key) !== undefined || Reflect.has(target, key),
    ownKeys: (target) => [...new Set([...Reflect.ownKeys(target), ...Object.keys(current.getStore() ?? {})])],
    getOwnPropertyDescriptor: (target, key) => {
      const env = own(key);
      return env ? { value: env[key as string], writable: true, enumerable: true, configurable: true } : Reflect.getOwnPropertyDescriptor(target, key);
    },
  });
}
