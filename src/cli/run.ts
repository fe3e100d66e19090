/** `silo run`: one rollout per selected task, in order. */
import type { Command } from 'commander';
import { existsSync } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { RunResult } from '../types.js';
import { SiloError } from '../errors.js';
import {
  AGENT_HELP,
  agentOptionsFromFlags,
  collect,
  ENV_HELP,
  EXIT_CODES_HELP,
  INIT_EXAMPLES_HELP,
  integer,
  isolation,
  ISOLATION_HELP,
  limitsFromFlags,
  MAX_TURNS_HELP,
  modelOptions,
  type ModelFlags,
  NO_NETWORK_HELP,
  requireAgent,
  STRICT_HELP,
  userOptions,
  type UserFlags,
} from './options.js';
import type { AgentRunner, Isolation, WarmWorkers } from '../pool/pool.js';
import type { PreparedAgents } from '../pool/compile.js';
import { createStyle } from '../inspect/style.js';
import { DEFAULT_LIMITS } from '../options.js';
import { onInterrupt } from './signals.js';

interface RunFlags extends ModelFlags, UserFlags {
  agent?: string;
  strict?: boolean;
  isolation: Isolation;
  network: boolean;
  env?: string[];
  maxTurns?: number;
  task?: string[];
  tag?: string[];
  timeout?: number;
  maxToolCalls?: number;
  memory?: number;
  seed?: number;
  out: string;
  json?: boolean;
}

export function registerRun(program: Command): void {
  const command = program
    .command('run')
    .description('run an agent on the tasks of a task file, one rollout each, and write the artifacts')
    .argument('<task-file>', 'a module that default-exports a task or an array of tasks (.js, .mjs, .ts)')
    .option('-a, --agent <file>', AGENT_HELP)
    .option('-e, --env <name>', ENV_HELP, collect)
    .option('--max-turns <n>', MAX_TURNS_HELP, integer(1))
    .option('-t, --task <id>', 'only tasks with this id or glob, e.g. "helpdesk/*" (repeatable)', collect)
    .option('--tag <tag>', 'only tasks with this tag (repeatable)', collect)
    .option('--timeout <ms>', 'wall-clock limit per rollout, ms (default 300000)', integer(1))
    .option('--max-tool-calls <n>', 'tool calls allowed per rollout (default 500)', integer(0))
    .option('--memory <mb>', 'heap limit of the agent worker, MiB (default 512)', integer(0))
    .option('--seed <n>', 'seed of ctx.random() (default: drawn and recorded)', integer(0))
    .option('--isolation <mode>', ISOLATION_HELP, isolation, 'process')
    .option('--no-network', NO_NETWORK_HELP)
    .option('-o, --out <dir>', 'artifact folder: writes <dir>/runs/<runId>/', '.silo')
    .option('--strict', STRICT_HELP)
    .option('--json', 'print a JSON array of { runId, taskId, status, score, termination, runDir } instead')
    .addHelpText(
      'after',
      `\n${EXIT_CODES_HELP}\n` +
        `${INIT_EXAMPLES_HELP}\n` +
        '  silo run evals/tasks.ts --agent evals/agents/solver.ts --task shop/refund-damaged\n' +
        '  OPENAI_BASE_URL=http://127.0.0.1:11434/v1 silo run evals/tasks.ts --agent openai:qwen2.5:7b\n' +
        '  OPENAI_API_KEY=sk-... silo run evals/tasks.ts --agent evals/agents/llm.ts --provider openai --no-network',
    )
    .action(async (taskFile: string, flags: RunFlags) => {
      process.exitCode = await runCommand(taskFile, flags);
    });
  modelOptions(command);
  userOptions(command);
}

/**
 * Marks on the way of a cold `silo run` (performance.mark, a handful per command), read by
 * `npm run bench` (coldRun) to say where the time of a cold run goes.
 */
const mark = (name: string): void => void performance.mark(`silo:run:${name}`);

async function runCommand(taskFile: string, flags: RunFlags): Promise<number> {
  mark('action');
  const agent = requireAgent(flags.agent, 'run');
  if (flags.user !== undefined && flags.solo) throw new SiloError('SILO_USAGE', '--user and --solo contradict each other: --user has a model play the user, --solo runs without one; drop one');
  // The sandbox starts first, on the other core, while this process imports what a run needs and
  // loads the task file: the agent is prepared (its worker's read permissions, which decide the
  // sandbox's mounts; a TypeScript agent compiled) and its sandbox started at once; usually it was,
  // before commander parsed the flags (run-early.ts), and is taken when it is the one they ask for.
  // One rollout at a time: one worker kept ready in the sandbox, for the next task's rollout.
  const agentFile = /^(openai|anthropic):/.test(agent) ? undefined : resolve(agent);
  const [{ takeEarlyRun }, { createRunner }, { PreparedAgents }, { agentEnv }] = await Promise.all([
    import('./run-early.js'),
    import('../pool/runners.js'),
    import('../pool/compile.js'),
    import('../agents/builtin.js'),
  ]);
  // Its first worker too, with the heap and environment the rollouts will give it (a task with a
  // heap limit of its own starts another).
  const worker = { memoryMb: flags.memory ?? DEFAULT_LIMITS.memoryMb, env: agentEnv(agent, flags.env ?? [], process.env) };
  const early = await takeEarlyRun({ agentFile, isolation: flags.isolation, noNetwork: !flags.network });
  const pool = early?.pool ?? createRunner(flags.isolation, { noNetwork: !flags.network, maxThreads: 1, minThreads: 1 });
  const prepared = early?.prepared ?? new PreparedAgents();
  if (agentFile !== undefined && existsSync(agentFile)) prepared.get(agentFile).then((p) => pool.warm?.(p.readable, worker), () => {});
  try {
    return await runTasks(taskFile, flags, agent, pool, prepared, worker);
  } finally {
    await pool.destroy();
    mark('closed');
  }
}

async function runTasks(taskFile: string, flags: RunFlags, agent: string, pool: AgentRunner, prepared: PreparedAgents, worker: WarmWorkers): Promise<number> {
  // What a run needs, imported when it runs (so that `silo --version` and the other commands do
  // not load it), all at once.
  const [{ runRollout }, { loadTasks }, { selectTasks }, { gatewayFor, checkModelAccess }, { suspicion }, { formatLine }, { userNote }] = await Promise.all([
    import('../rollout/rollout.js'),
    import('../load.js'),
    import('../filter.js'),
    import('../gateway/shared.js'),
    import('../inspect/diagnose.js'),
    import('./run-line.js'),
    import('../user/plan.js'),
  ]);
  mark('imported');
  const tasks = selectTasks(await loadTasks([taskFile]), { ...(flags.task ? { task: flags.task } : {}), ...(flags.tag ? { tag: flags.tag } : {}) });
  mark('tasks');
  const limits = limitsFromFlags(flags);
  const env = { ...worker.env };
  const agentOptions = agentOptionsFromFlags(flags);
  const providers = flags.provider ?? [];
  // One gateway for every rollout of the command, when the agent reaches a model through it.
  const note = userNote(tasks.map((t) => t.task), flags);
  if (note) process.stderr.write(`note: ${note}\n`);
  const gateway = await gatewayFor(agent, providers, flags);
  if (gateway) checkModelAccess(gateway, agent, providers, flags.user);

  const s = createStyle(process.stdout);
  const cancel = new AbortController();
  const stopListening = onInterrupt(() => cancel.abort());
  const results: RunResult[] = [];
  try {
    for (const { task, file } of tasks) {
      if (cancel.signal.aborted) break;
      const result = await runRollout({
        task,
        taskFile: file,
        agent,
        pool,
        ...(flags.strict ? { strict: true } : {}),
        ...(flags.user === undefined ? {} : { user: flags.user }),
        ...(flags.solo ? { solo: true } : {}),
        env,
        ...(providers.length > 0 ? { providers } : {}),
        ...(gateway ? { gateway } : {}),
        ...(agentOptions ? { agentOptions } : {}),
        limits,
        preparedAgents: prepared,
        outDir: flags.out,
        signal: cancel.signal,
        ...(flags.seed === undefined ? {} : { seed: flags.seed }),
      });
      results.push(result);
      mark('rollout');
      if (!flags.json) process.stdout.write(`${formatLine(result, s)}\n`);
    }
  } finally {
    stopListening();
    await gateway?.close();
  }

  if (flags.json) {
    const rows = results.map(({ runId, taskId, status, score, termination, runDir }) => ({ runId, taskId, status, score, termination, runDir }));
    process.stdout.write(`${JSON.stringify(rows, null, 2)}\n`);
  } else {
    const passed = results.filter((r) => r.status === 'passed').length;
    const failed = results.filter((r) => r.status === 'failed').length;
    const errors = results.length - passed - failed;
    const suspicious = results.filter((r) => suspicion(r.status, r.diagnosis)).length;
    const parts = [
      s.green(`${passed} passed`) + (suspicious ? ` (${s.yellow(`${suspicious} suspicious`)})` : ''),
      failed ? s.red(`${failed} failed`) : '',
      errors ? s.yellow(`${errors} ${errors === 1 ? 'error' : 'errors'}`) : '',
    ].filter(Boolean);
    const runsDir = join(resolve(flags.out), 'runs');
    const where = relative(process.cwd(), runsDir).startsWith('..') ? runsDir : relative(process.cwd(), runsDir);
    process.stdout.write(`\n${results.length} run${results.length === 1 ? '' : 's'}: ${parts.join(', ')}  ${s.dim(`artifacts in ${where}/`)}\n`);
  }
  if (cancel.signal.aborted) return 130;
  return results.every((r) => r.status === 'passed') ? 0 : 1;
}
