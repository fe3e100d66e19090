/** Parsers for CLI option values: each rejects bad input with a one-line usage error. */
import { InvalidArgumentError, type Command } from 'commander';
import { SiloError } from '../errors.js';
import type { AgentOptions, Limits } from '../types.js';
import type { Isolation } from '../pool/pool.js';
import { DEFAULT_MAX_TURNS } from '../options.js';
import { CACHE_MODES, type CacheMode } from '../gateway/cache.js';
import { PROVIDERS, type Provider } from '../gateway/providers.js';
import { parseUserModel } from '../user/model-user.js';

/** The help text of `--agent` (run and eval). */
export const AGENT_HELP = 'the agent module (default-exports the agent function), or a built-in agent: openai:<model> or anthropic:<model>';

/**
 * What the exit codes mean, for `--help`. A run's own failures (an agent that does not load, a
 * world that cannot be built, a verifier that throws) are runs with status `error`: exit 1, with
 * artifacts. Exit 2 is for what stops Silo before a run can be recorded.
 */
export const EXIT_CODES_HELP =
  'Exit codes: 0 every run passed; 1 a run failed or ended in error (an agent that does not load, a\n' +
  'createState that fails or reuses its world, a verifier that throws: each is recorded as a run with\n' +
  'status error); 2 usage or set-up error, before any run is recorded (bad flags, a missing file, a task\n' +
  'file that does not load, a malformed schema, an artifact folder that cannot be written).';

/** The line before the commands' examples: they run on what `silo init` writes, in any project. */
export const INIT_EXAMPLES_HELP = 'Examples, on the files `npx silo init` writes (evals/):';

/** The help text of `--strict` (run and eval). */
export const STRICT_HELP =
  'fail a run whose answer has nothing behind it (ungrounded_answer: no successful tool call, or an action claimed while the world did not change), as a failed check named grounded; without it, such a pass is shown as suspicious';

/** `--agent`, which `run` and `eval` both need (an eval being resumed has its own): one message for both. */
export function requireAgent(agent: string | undefined, command: 'run' | 'eval'): string {
  if (agent !== undefined && agent !== '') return agent;
  throw new SiloError(
    'SILO_USAGE',
    `--agent is required: the agent module (default-exports the agent function) or openai:<model> / anthropic:<model>, e.g. \`silo ${command} ${command === 'run' ? 'tasks.ts' : 'evals/'} --agent my-agent.ts\``,
  );
}

/** The help text of `--env`. */
export const ENV_HELP =
  'pass this variable from the shell into the agent as it is (repeatable; a raw key handed this way is the agent\'s to use or leak: prefer --provider); the agent sees nothing else';

/** The help text of `--provider`. */
export const PROVIDER_HELP =
  "let the agent reach this provider's models through Silo's gateway (openai or anthropic, repeatable): it gets OPENAI_BASE_URL/OPENAI_API_KEY (or the ANTHROPIC_ pair) naming the gateway and a token for this rollout; the gateway uses your shell's key, records each call and its tokens (built-in agents get theirs without it)";

/** The model flags `run` and `eval` share. */
export interface ModelFlags {
  provider?: Provider[];
  maxModelRequests?: number;
  maxTokens?: number;
  modelConcurrency?: number;
  modelCache?: string;
  modelCacheMode?: CacheMode;
}

/** `--provider openai|anthropic`, repeatable. */
export function provider(value: string, previous: Provider[] | undefined): Provider[] {
  if (!PROVIDERS.includes(value as Provider)) throw new InvalidArgumentError(`expected ${PROVIDERS.join(' or ')}, got '${value}'`);
  return [...(previous ?? []), value as Provider];
}

/** `--model-cache-mode read|write|readwrite`. */
export function cacheMode(value: string): CacheMode {
  if (!CACHE_MODES.includes(value as CacheMode)) throw new InvalidArgumentError(`expected ${CACHE_MODES.join(', ')}, got '${value}'`);
  return value as CacheMode;
}

/** Registers the model flags on a command. */
export function modelOptions(command: Command): Command {
  return command
    .option('--provider <name>', PROVIDER_HELP, provider)
    .option('--max-model-requests <n>', 'model requests allowed per rollout (default 200); the next is refused and the rollout ends as model_limit', integer(0))
    .option('--max-tokens <n>', 'input + output tokens allowed per rollout (default: no limit); once reached, model requests are refused (model_limit)', integer(1))
    .option('--model-concurrency <n>', 'model requests in flight upstream at once, per provider, across all rollouts (default 16); 429/5xx are retried with backoff', integer(1))
    .option('--model-cache <dir>', 'store model responses in <dir> and replay them (keyed by request, task, trial and occurrence): a rerun makes no model request')
    .option('--model-cache-mode <mode>', 'read (replay what is stored; a miss goes to the model and is not stored), write (store, never replay) or readwrite', cacheMode, 'readwrite');
}

/** The conversation flags `run` and `eval` share. */
export interface UserFlags {
  user?: string;
  solo?: boolean;
}

/** `--user provider:model` and `--solo`: who plays the simulated user of tasks that have one. */
export function userOptions(command: Command): Command {
  return command
    .option('--user <provider:model>', "let this model play the simulated user of every task that has a user (over the task's own script or model), e.g. openai:gpt-4o-mini; it is called on the host through the gateway, with your shell's key, and its tokens are counted apart (userUsage)", userModel)
    .option('--solo', "run tasks that have a user without one: the agent gets the task's instruction (tau2's solo mode)");
}

function userModel(value: string): string {
  try {
    const { provider, model } = parseUserModel(value);
    return `${provider}:${model}`;
  } catch (err) {
    throw new InvalidArgumentError((err as Error).message);
  }
}

/** The help text of `--max-turns`. */
export const MAX_TURNS_HELP = `model requests a built-in agent makes before giving up (default ${DEFAULT_MAX_TURNS}); reaches any agent as options.maxTurns`;

export function integer(min: number) {
  return (value: string): number => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min) throw new InvalidArgumentError(`expected an integer >= ${min}, got '${value}'`);
    return n;
  };
}

/** For repeatable options: `--task a --task b`. */
export function collect(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/** The limit flags that `run` and `eval` share, as Limits overrides. */
export function limitsFromFlags(flags: { timeout?: number; maxToolCalls?: number; memory?: number; maxModelRequests?: number; maxTokens?: number }): Partial<Limits> {
  const limits: Partial<Limits> = {};
  if (flags.timeout !== undefined) limits.timeoutMs = flags.timeout;
  if (flags.maxToolCalls !== undefined) limits.maxToolCalls = flags.maxToolCalls;
  if (flags.memory !== undefined) limits.memoryMb = flags.memory;
  if (flags.maxModelRequests !== undefined) limits.maxModelRequests = flags.maxModelRequests;
  if (flags.maxTokens !== undefined) limits.maxTokens = flags.maxTokens;
  return limits;
}

/** `--max-turns` as agent options, or undefined when not given. */
export function agentOptionsFromFlags(flags: { maxTurns?: number }): AgentOptions | undefined {
  return flags.maxTurns === undefined ? undefined : { maxTurns: flags.maxTurns };
}

/** The help text of `--isolation`. */
export const ISOLATION_HELP =
  'where agent workers live: process (a sandbox process the host outlives: a bubblewrap jail, or namespaces only, as the machine allows; SILO_SANDBOX=bwrap|unshare|process forces one) or thread (in this process: trusted agents only, less overhead; ' +
  "an agent there can abort this process with an allocation V8 cannot survive, and read, write or close any descriptor it has open: forge lines of this command's output (--json included) " +
  "and of the eval's runs.jsonl, take bytes off its sockets; a trace.jsonl it writes into is written again from what Silo recorded; see SECURITY.md)";

/** The help text of `--no-network`. */
export const NO_NETWORK_HELP =
  'give agents no network but the model gateway (a network namespace of their own, into which the sandbox relays the gateway for --provider; needs --isolation process and Linux namespaces)';

/** `--isolation process|thread`. */
export function isolation(value: string): Isolation {
  if (value !== 'process' && value !== 'thread') throw new InvalidArgumentError(`expected process or thread, got '${value}'`);
  return value;
}
