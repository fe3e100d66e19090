/**
 * `silo run`'s sandbox, started before the command line is parsed. Booting the sandbox (bubblewrap,
 * a second Node, its first worker) is the longest part of a cold run; the command's own start
 * (commander, the command's definitions, then the rollout's modules and the task file) can happen
 * meanwhile. So main() reads the few arguments the sandbox depends on (the agent, `--isolation`,
 * `--no-network`) straight from argv, and when they are plain, prepares the agent and starts its
 * sandbox at once, with no worker yet. The command, once commander has parsed its flags, takes that
 * sandbox only if it is the one it would have started (takeEarlyRun); otherwise it is ended and
 * the command starts its own. One nobody takes (`--help`, a usage error, a task file that does not
 * load) is ended at shutdown.
 */
import { existsSync, statSync } from 'node:fs';
import { resolve } from 'node:path';
import type { PreparedAgents } from '../pool/compile.js';
import type { AgentRunner } from '../pool/pool.js';
import { atShutdown } from '../shutdown.js';

/** What the sandbox depends on, as argv says it. */
export interface RunGuess {
  /** The agent module, absolute. */
  agentFile: string;
  noNetwork: boolean;
}

/**
 * What `silo run <args>` needs of a sandbox, read from its arguments the way commander will read
 * them in the plain cases; null when it runs no sandbox, asks for help, or says it some other way
 * (commander decides then, and the command starts its sandbox itself).
 */
export function guessRun(args: readonly string[]): RunGuess | null {
  let agent: string | undefined;
  let isolation: string | undefined = 'process';
  let noNetwork = false;
  for (let i = 0; i < args.length; i++) {
    const arg = args[i]!;
    if (arg === '--' || arg === '-h' || arg === '--help') return null;
    if (arg === '-a' || arg === '--agent') agent = args[++i];
    else if (arg.startsWith('--agent=')) agent = arg.slice('--agent='.length);
    else if (arg === '--isolation') isolation = args[++i];
    else if (arg.startsWith('--isolation=')) isolation = arg.slice('--isolation='.length);
    else if (arg === '--no-network') noNetwork = true;
  }
  if (isolation !== 'process' || agent === undefined || agent === '' || /^(openai|anthropic):/.test(agent)) return null;
  const agentFile = resolve(agent);
  try {
    if (!existsSync(agentFile) || !statSync(agentFile).isFile()) return null;
  } catch {
    return null;
  }
  return { agentFile, noNetwork };
}

interface Early {
  guess: RunGuess;
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
  if (guess === null || early !== undefined) return;
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
    // The options runCommand gives createRunner for --isolation process (one rollout at a time).
    pool = new SandboxPool({ maxThreads: 1, minThreads: 1, warn, ...(guess.noNetwork ? { noNetwork: true } : {}) });
  } catch {
    return; // (a bad SILO_SANDBOX) the command says what is wrong
  }
  const entry: Early = { guess, pool, prepared: new PreparedAgents(), state };
  early = entry;
  atShutdown(async () => {
    if (early === entry) early = undefined;
    if (!state.taken) await pool.destroy();
  });
  // A plain JavaScript agent is prepared at once, and its sandbox spawned before this resolves; one
  // that is compiled starts its sandbox when compiled. A failure is the command's to report.
  entry.prepared.get(guess.agentFile).then(
    (p) => pool.warm?.(p.readable),
    () => {},
  );
}

/**
 * The sandbox started early and its prepared agents, if they are what the command asks for
 * (the same agent, in a sandbox, with the same network); otherwise none, and one started on a
 * wrong guess is ended.
 */
export async function takeEarlyRun(want: { agentFile: string | undefined; isolation: string; noNetwork: boolean }): Promise<{ pool: AgentRunner; prepared: PreparedAgents } | undefined> {
  const entry = early;
  early = undefined;
  if (!entry || entry.state.taken) return undefined;
  entry.state.taken = true;
  if (want.isolation === 'process' && want.agentFile === entry.guess.agentFile && want.noNetwork === entry.guess.noNetwork) {
    for (const message of entry.state.said) process.stderr.write(`silo: ${message}\n`);
    return { pool: entry.pool, prepared: entry.prepared };
  }
  await entry.pool.destroy();
  return undefined;
}
