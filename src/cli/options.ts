/** Parsers for CLI option values: each rejects bad input with a one-line usage error. */
import { InvalidArgumentError } from 'commander';
import type { AgentOptions, Limits } from '../types.js';
import type { Isolation } from '../pool/pool.js';
import { DEFAULT_MAX_TURNS } from '../options.js';

/** The help text of `--agent` (run and eval). */
export const AGENT_HELP = 'the agent module (default-exports the agent function), or a built-in agent: openai:<model> or anthropic:<model>';

/** The help text of `--env`. */
export const ENV_HELP =
  'pass this variable from the shell into the agent (repeatable); the agent sees nothing else ' +
  '(openai:/anthropic: agents also get OPENAI_/ANTHROPIC_BASE_URL and _API_KEY when set)';

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
export function limitsFromFlags(flags: { timeout?: number; maxToolCalls?: number; memory?: number }): Partial<Limits> {
  const limits: Partial<Limits> = {};
  if (flags.timeout !== undefined) limits.timeoutMs = flags.timeout;
  if (flags.maxToolCalls !== undefined) limits.maxToolCalls = flags.maxToolCalls;
  if (flags.memory !== undefined) limits.memoryMb = flags.memory;
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
export const NO_NETWORK_HELP = 'give agents no network (a network namespace of their own; needs --isolation process and Linux namespaces)';

/** `--isolation process|thread`. */
export function isolation(value: string): Isolation {
  if (value !== 'process' && value !== 'thread') throw new InvalidArgumentError(`expected process or thread, got '${value}'`);
  return value;
}
