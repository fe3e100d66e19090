/** `silo run`: one rollout per selected task, in order. */
import type { Command } from 'commander';
import { join, relative, resolve } from 'node:path';
import { loadTasks } from '../load.js';
import { SiloError } from '../errors.js';
import { selectTasks } from '../filter.js';
import { runRollout } from '../rollout/rollout.js';
import type { Diagnosis, RunResult } from '../types.js';
import { suspicion } from '../inspect/diagnose.js';
import {
  AGENT_HELP,
  agentOptionsFromFlags,
  collect,
  ENV_HELP,
  EXIT_CODES_HELP,
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
import { soloNote } from '../user/plan.js';
import { gatewayFor } from '../gateway/shared.js';
import { createRunner, type Isolation } from '../pool/pool.js';
import { agentEnv } from '../agents/builtin.js';
import { createStyle } from '../inspect/style.js';
import { ms } from '../inspect/show.js';
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
        'Examples:\n  silo run fixtures/helpdesk/tasks.ts --agent fixtures/agents/helpdesk-solver.ts --task helpdesk/close-ticket\n' +
        '  OPENAI_BASE_URL=http://127.0.0.1:11434/v1 silo run fixtures/helpdesk/tasks.ts --agent openai:qwen2.5:7b\n' +
        '  OPENAI_API_KEY=sk-... silo run fixtures/helpdesk/tasks.ts --agent my-llm-agent.ts --provider openai --no-network',
    )
    .action(async (taskFile: string, flags: RunFlags) => {
      process.exitCode = await runCommand(taskFile, flags);
    });
  modelOptions(command);
  userOptions(command);
}

async function runCommand(taskFile: string, flags: RunFlags): Promise<number> {
  const agent = requireAgent(flags.agent, 'run');
  const tasks = selectTasks(await loadTasks([taskFile]), { ...(flags.task ? { task: flags.task } : {}), ...(flags.tag ? { tag: flags.tag } : {}) });
  const limits = limitsFromFlags(flags);
  const env = agentEnv(agent, flags.env ?? [], process.env);
  const agentOptions = agentOptionsFromFlags(flags);
  const providers = flags.provider ?? [];
  // One gateway for every rollout of the command, when the agent reaches a model through it.
  const gateway = gatewayFor(agent, providers, flags);
  if (flags.user !== undefined && flags.solo) throw new SiloError('SILO_USAGE', '--user and --solo contradict each other: --user has a model play the user, --solo runs without one; drop one');
  const solo = soloNote(tasks.map((t) => t.task), flags);
  if (solo) process.stderr.write(`note: ${solo}\n`);

  const pool = createRunner(flags.isolation, { noNetwork: !flags.network });
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
        outDir: flags.out,
        signal: cancel.signal,
        ...(flags.seed === undefined ? {} : { seed: flags.seed }),
      });
      results.push(result);
      if (!flags.json) process.stdout.write(`${formatLine(result, s)}\n`);
    }
  } finally {
    stopListening();
    await pool.destroy();
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
      errors ? s.yellow(`${errors} error`) : '',
    ].filter(Boolean);
    const runsDir = join(resolve(flags.out), 'runs');
    const where = relative(process.cwd(), runsDir).startsWith('..') ? runsDir : relative(process.cwd(), runsDir);
    process.stdout.write(`\n${results.length} run${results.length === 1 ? '' : 's'}: ${parts.join(', ')}  ${s.dim(`artifacts in ${where}/`)}\n`);
  }
  if (cancel.signal.aborted) return 130;
  return results.every((r) => r.status === 'passed') ? 0 : 1;
}

/** Findings that say how a run ended. */
const ENDINGS = new Set<string>(['threw', 'load_error', 'crashed', 'timeout', 'tool_call_limit', 'model_limit', 'out_of_memory']);

export function formatLine(r: RunResult, s: ReturnType<typeof createStyle>): string {
  // A pass whose answer had nothing behind it is a pass with a warning (--strict fails it).
  const suspicious = suspicion(r.status, r.diagnosis) !== undefined;
  const mark = suspicious ? s.yellow('⚠') : r.status === 'passed' ? s.green('✓') : r.status === 'failed' ? s.red('✗') : s.yellow('!');
  const score = r.score === null ? '  -  ' : r.score.toFixed(2);
  const head = `${mark} ${r.taskId}  ${r.status}  ${score}  ${r.termination}  ${r.toolCalls} call${r.toolCalls === 1 ? '' : 's'}  ${ms(r.durationMs)}${suspicious ? `  ${s.yellow('suspicious')}` : ''}`;
  const lines = [head];
  if (r.error) lines.push(`    ${s.yellow(r.error.code)}: ${r.error.message}`);
  // The diagnosis says how it went wrong; the failed checks below say what was expected.
  if (r.status !== 'passed' || suspicious) {
    // How the run ended (what the agent threw, the limit it hit) comes first, then an ungrounded
    // answer (never cut), then the rest in trace order.
    const findings = r.diagnosis.filter((f) => f.code !== 'self_corrected');
    const rank = (f: Diagnosis): number => (ENDINGS.has(f.code) ? 0 : f.code === 'ungrounded_answer' ? 1 : 2);
    const shown = [0, 1, 2].flatMap((i) => findings.filter((f) => rank(f) === i)).slice(0, 3);
    // The call a finding blames, numbered as `silo show` numbers it (the answer needs no pointer).
    for (const d of shown) lines.push(`    ${s.yellow(d.code)}${d.at?.startsWith('call #') ? s.dim(` (${d.at})`) : ''}: ${d.message}`);
  }
  for (const c of r.checks.filter((c) => !c.pass).slice(0, 5)) {
    const detail = c.message ?? ('expected' in c ? `expected ${JSON.stringify(c.expected)}, actual ${JSON.stringify(c.actual)}` : '');
    lines.push(`    ${s.red('✗')} ${c.name}${detail ? s.dim(`: ${detail.slice(0, 200)}`) : ''}`);
  }
  if (r.status !== 'passed' || suspicious) lines.push(`    ${s.dim(`→ silo show ${r.runId}`)}`);
  return lines.join('\n');
}
