/**
 * The sandbox of `silo run` and `silo eval`, started before the command line is parsed. Booting the
 * sandbox (bubblewrap, a second Node, its first workers) is the longest part of a cold command;
 * the command's own start (commander, the command's definitions, then the rollouts' modules and
 * the task files) can happen meanwhile. So main() reads the few arguments the sandbox depends on
 * (the agent, `--isolation`, `--no-network`, and for an eval `--concurrency`, `--reuse-workers`
 * and `--trials`) straight from argv, and when they are plain, prepares the agent and starts
 * its sandbox at once, with no worker yet. The command, once commander has parsed its flags, takes
 * that sandbox only if it is the one it would have started (takeEarlyRun, takeEarlyEval);
 * otherwise it is ended and the command starts its own. One nobody takes (`--help`, a usage
 * error, a task file that does not load) is ended at shutdown.
 */
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { PreparedAgents } from '../pool/compile.js';
import type { AgentRunner } from '../pool/pool.js';
import { DEFAULT_EVAL_CONCURRENCY } from '../options.js';
import { atShutdown } from '../shutdown.js';

/** What the sandbox depends on, as argv says it. */
export interface RunGuess {
  /** The agent module, absolute. */
  agentFile: string;
  noNetwork: boolean;
}

/** What an eval's sandbox depends on besides, as argv says it. */
export interface EvalGuess extends RunGuess {
  /** Rollouts at once (`--concurrency`, else the default): the sandbox's most workers. */
  concurrency: number;
  /** `--reuse-workers`. */
  reuse: boolean;
  /** `--trials`: the fewest rollouts the eval runs (how its agent is prepared depends on it). */
  trials: number;
}

/**
 * What `silo run <args>` needs of a sandbox, read from its arguments the way commander will read
 * them in the plain cases; null when it runs no sandbox, asks for help, or says it some other way
 * (commander decides then, and the command starts its sandbox itself).
 */
export function guessRun(args: readonly string[]): RunGuess | null {
  const read = readArgs(args, []);
  return read && sandboxGuess(read);
}

/**
 * What `silo eval <args>` needs of a sandbox, as guessRun reads it; null also for an eval that
 * runs no sandbox here (`--queue`) or whose options are stored (`--resume`).
 */
export function guessEval(args: readonly string[]): EvalGuess | null {
  const read = readArgs(args, ['--concurrency', '-c', '--trials', '-k']);
  if (read === null || read.flags.has('--resume') || read.flags.has('--queue')) return null;
  const guess = sandboxGuess(read);
  const concurrency = count(read.values.get('--concurrency') ?? read.values.get('-c'), DEFAULT_EVAL_CONCURRENCY);
  const trials = count(read.values.get('--trials') ?? read.values.get('-k'), 1);
  if (guess === null || concurrency === null || trials === null) return null;
  return { ...guess, concurrency, reuse: read.flags.has('--reuse-workers'), trials };
}

interface ReadArgs {
  agent: string | undefined;
  isolation: string | undefined;
  /** The flags given (their names, as written before any `=`). */
  flags: Set<string>;
  /** The last value of each option of `valued` given. */
  values: Map<string, string | undefined>;
}

/** The agent, --isolation, the flags given and the values of `valued`; null for help or `--`. */
function readArgs(args: readonly string[], valued: readonly string[]): ReadArgs | null {
  const read: ReadArgs = { agent: undefined, isolation: 'process', flags: new Set(), values: new Map() };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--' || arg === '-h' || arg === '--help') return null;
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1;
    const name = eq > 0 ? arg.slice(0, eq) : arg;
    read.flags.add(name);
    const value = (): string | undefined => (eq > 0 ? arg.slice(eq + 1) : args[++i]);
    if (name === '-a' || name === '--agent') read.agent = value();
    else if (name === '--isolation') read.isolation = value();
    else if (valued.includes(name)) read.values.set(name, value());
  }
  return read;
}

function sandboxGuess({ agent, isolation, flags }: ReadArgs): RunGuess | null {
  if (isolation !== 'process' || agent === undefined || agent === '' || /^(openai|anthropic):/.test(agent)) return null;
  const agentFile = resolve(agent);
  try {
    if (!existsSync(agentFile) || !statSync(agentFile).isFile()) return null;
  } catch {
    return null;
  }
  return { agentFile, noNetwork: flags.has('--no-network') };
}

/** A whole number ≥ 1 written plainly, `fallback` when not given, null otherwise. */
function count(text: string | undefined, fallback: number): number | null {
  if (text === undefined) return fallback;
  return /^[1-9][0-9]{0,6}$/.test(text) ? Number(text) : null;
}

interface Early {
  command: 'run' | 'eval';
  guess: RunGuess | EvalGuess;
  pool: AgentRunner;
  prepared: PreparedAgents;
  /** Whether a command took it (or ended it), and what it had to say before (a weaker confinement). */
  state: { taken: boolean; said: string[] };
}

let early: Early | undefined;

/**
 * Starts the sandbox `silo run <args>` will need, if argv says plainly which; resolves once it is
 * being started (the agent's preparation and the spawn follow on their own).
 */
export async function startEarlyRun(args: readonly string[]): Promise<void> {
  const guess = guessRun(args);
  // The options runCommand gives createRunner for --isolation process (one rollout at a time).
  if (guess !== null) await startEarly('run', guess, { maxThreads: 1, minThreads: 1 }, 0);
}

/** Starts the sandbox `silo eval <args>` will need, as startEarlyRun does for `silo run`. */
export async function startEarlyEval(args: readonly string[]): Promise<void> {
  const guess = guessEval(args);
  // The options runEval gives createRunner; the agent prepared as for an eval of `trials` rollouts
  // at least (a guess: the tasks are not loaded yet).
  if (guess !== null) await startEarly('eval', guess, { maxThreads: guess.concurrency, ...(guess.reuse ? { reuse: true } : {}) }, guess.trials);
}

async function startEarly(command: Early['command'], guess: RunGuess | EvalGuess, options: { maxThreads: number; minThreads?: number; reuse?: true }, rollouts: number): Promise<void> {
  if (early !== undefined) return;
  const [{ SandboxPool }, { PreparedAgents }] = await Promise.all([import('../sandbox/pool.js'), import('../pool/compile.js')]);
  const state = { taken: false, said: [] as string[] };
  // Held until a command takes the sandbox (a usage error is not preceded by a word on the
  // sandbox), then said once each, as the sandbox says it otherwise.
  const warn = (message: string): void => {
    if (state.said.includes(message)) return;
    state.said.push(message);
    if (state.taken) process.stderr.write(`silo: ${message}\n`);
  };
  let pool: AgentRunner;
  try {
    pool = new SandboxPool({ ...options, warn, ...(guess.noNetwork ? { noNetwork: true } : {}) });
  } catch {
    return; // (a bad SILO_SANDBOX) the command says what is wrong
  }
  const entry: Early = { command, guess, pool, prepared: new PreparedAgents({ rollouts }), state };
  early = entry;
  atShutdown(async () => {
    if (early === entry) early = undefined;
    if (!state.taken) await pool.destroy();
  });
  // A plain JavaScript agent is prepared at once, and its sandbox spawned before this resolves; one
  // that is compiled starts its sandbox when compiled. A failure is the command's to report.
  entry.prepared.get(guess.agentFile, { reused: options.reuse === true }).then(
    (p) => pool.warm?.(p.readable),
    () => {},
  );
}

/** The entry started early for `command`, if `matches` it; otherwise none, and one started on a wrong guess is ended. */
async function takeEarly(command: Early['command'], matches: (guess: RunGuess | EvalGuess) => boolean): Promise<Early | undefined> {
  const entry = early;
  early = undefined;
  if (!entry || entry.state.taken) return undefined;
  entry.state.taken = true;
  if (entry.command === command && matches(entry.guess)) {
    for (const message of entry.state.said) process.stderr.write(`silo: ${message}\n`);
    return entry;
  }
  await entry.pool.destroy();
  return undefined;
}

/**
 * The sandbox started early and its prepared agents, if they are what the command asks for
 * (the same agent, in a sandbox, with the same network); otherwise none, and one started on a
 * wrong guess is ended.
 */
export async function takeEarlyRun(want: { agentFile: string | undefined; isolation: string; noNetwork: boolean }): Promise<{ pool: AgentRunner; prepared: PreparedAgents } | undefined> {
  const entry = await takeEarly('run', (guess) => want.isolation === 'process' && want.agentFile === guess.agentFile && want.noNetwork === guess.noNetwork);
  return entry && { pool: entry.pool, prepared: entry.prepared };
}

/**
 * The sandbox started early for `silo eval`, if it is the one the parsed flags ask for (also the
 * same number of rollouts at once, and workers reused or not); otherwise none, as takeEarlyRun.
 * `trials`: the agent was prepared as for an eval of that many rollouts (see startEarlyEval).
 */
export async function takeEarlyEval(want: {
  agentFile: string | undefined;
  isolation: string;
  noNetwork: boolean;
  concurrency: number;
  reuse: boolean;
}): Promise<{ pool: AgentRunner; prepared: PreparedAgents; trials: number } | undefined> {
  const entry = await takeEarly('eval', (guess) => {
    const g = guess as EvalGuess;
    return want.isolation === 'process' && want.agentFile === g.agentFile && want.noNetwork === g.noNetwork && want.concurrency === g.concurrency && want.reuse === g.reuse;
  });
  return entry && { pool: entry.pool, prepared: entry.prepared, trials: (entry.guess as EvalGuess).trials };
}
