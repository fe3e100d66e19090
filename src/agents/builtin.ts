/**
 * The built-in agents: `openai:<model>` and `anthropic:<model>` name agent modules shipped in the
 * package (src/agents/openai.ts, src/agents/anthropic.ts, run built from dist/ like any agent).
 * Host side only: the agents themselves never import this file.
 */
import { join } from 'node:path';
import { SiloError } from '../errors.js';
import { requireOptional } from '../optional.js';
import { PACKAGE_ROOT } from '../paths.js';

/** Each provider's module. */
export const BUILTIN_AGENTS = {
  openai: { module: 'openai.js' },
  anthropic: { module: 'anthropic.js' },
} as const;

/** The provider a built-in agent speaks to (it is granted it through the gateway). */
export type Provider = keyof typeof BUILTIN_AGENTS;

/** A built-in agent named by `--agent <provider>:<model>`. */
export interface BuiltinAgent {
  provider: Provider;
  model: string;
  /** The built module that runs in the worker. */
  path: string;
}

/** A model of each provider, for the examples in messages. */
const EXAMPLE_MODEL: Record<Provider, string> = { openai: 'gpt-4o-mini', anthropic: 'claude-sonnet-4-5' };

/** The built-in agent `agent` names, or null when it is a module path. */
export function parseBuiltinAgent(agent: string): BuiltinAgent | null {
  const m = /^(openai|anthropic):(.*)$/s.exec(agent);
  if (!m) return null;
  const provider = m[1] as Provider;
  const model = (m[2] ?? '').trim();
  if (model === '') throw new SiloError('SILO_USAGE', `--agent ${provider}: needs a model name, e.g. --agent ${provider}:${EXAMPLE_MODEL[provider]}`);
  const spec = BUILTIN_AGENTS[provider];
  return { provider, model, path: join(PACKAGE_ROOT, 'dist', 'src', 'agents', spec.module) };
}

/**
 * The error for an agent file that is not there; one written `name:model`, or a provider's name
 * alone (`openai`), is told the built-in agents' names.
 */
export function agentNotFound(path: string, given: string): SiloError {
  const provider = /^(openai|anthropic)$/i.exec(given.trim())?.[1]?.toLowerCase() as Provider | undefined;
  const builtins = provider
    ? ` (the built-in agents are openai:<model> and anthropic:<model>: --agent ${provider}:${EXAMPLE_MODEL[provider]}, say)`
    : /^[a-z][a-z0-9-]*:[^/\\]/i.test(given)
      ? ' (the built-in agents are openai:<model> and anthropic:<model>)'
      : '';
  return new SiloError('SILO_AGENT_NOT_FOUND', `agent file not found: ${path}; pass the path of a module that default-exports the agent function${builtins}`);
}

/**
 * Throws the one-line usage error when the SDK a built-in agent runs on is not installed (the SDKs
 * are optional dependencies: `npm install openai` for `openai:<model>`).
 */
export function requireAgentSdk(agent: BuiltinAgent): void {
  requireOptional(agent.provider);
}

/**
 * The environment an agent worker gets: the variables named by `--env` (a built-in agent reaches
 * its model through the gateway, which the rollout grants it: none of the host's variables).
 * Throws a usage error for an `--env` name the host does not have (or that is not a valid name).
 */
export function agentEnv(agent: string, names: readonly string[], host: NodeJS.ProcessEnv): Record<string, string> {
  const env: Record<string, string> = {};
  // A malformed built-in agent name is reported here, with the others.
  parseBuiltinAgent(agent);
  for (const name of names) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
      throw new SiloError('SILO_USAGE', `--env takes the name of a variable (letters, digits, _), not '${name}'; set the variable in the shell and pass its name`);
    }
    const value = host[name];
    if (value === undefined) throw new SiloError('SILO_USAGE', `--env ${name}: ${name} is not set in this shell; set it (export ${name}=...) or drop the flag`);
    env[name] = value;
  }
  return env;
}
