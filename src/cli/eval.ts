/** `silo eval`: every task × k trials in parallel, with progress, a report and an exit code. */
import { Option, type Command } from 'commander';
import { writeFileSync } from 'node:fs';
import { SiloError } from '../errors.js';
import { progressPrinter } from '../eval/progress.js';
import { junitReport, REPORTERS, tableReport, type ReporterName } from '../eval/reporters.js';
import { runEval } from '../eval/run-eval.js';
import { parseShard, type Shard } from '../eval/shard.js';
import { EvalStore } from '../eval/store.js';
import { DEFAULT_EVAL_CONCURRENCY, DEFAULT_RETRIES } from '../options.js';
import type { EvalSummary } from '../types.js';
import { AGENT_HELP, agentOptionsFromFlags, collect, ENV_HELP, integer, isolation, ISOLATION_HELP, limitsFromFlags, MAX_TURNS_HELP, modelOptions, NO_NETWORK_HELP, type ModelFlags } from './options.js';
import type { Isolation } from '../pool/pool.js';
import { agentEnv } from '../agents/builtin.js';
import { onInterrupt } from './signals.js';
import { queueRunner } from '../queue/coordinator.js';
import { createStyle } from '../inspect/style.js';
import { writeReport } from '../inspect/report.js';

interface EvalFlags extends ModelFlags {
  agent?: string;
  isolation: Isolation;
  network: boolean;
  env?: string[];
  maxTurns?: number;
  trials: number;
  concurrency: number;
  task?: string[];
  tag?: string[];
  reporter: ReporterName;
  output?: string;
  resume?: string;
  evalId?: string;
  shard?: Shard;
  queue?: string;
  minPassRate?: number;
  retries: number;
  reuseWorkers?: boolean;
  report?: boolean;
  timeout?: number;
  maxToolCalls?: number;
  memory?: number;
  out: string;
}

export function registerEval(program: Command): void {
  const command = program
    .command('eval')
    .description('run every selected task k times in parallel and report pass rates, pass@k and pass^k')
    .argument('[paths...]', 'task files, or folders holding tasks.*, *.task.* or *.tasks.* files')
    .option('-a, --agent <file>', AGENT_HELP)
    .option('-e, --env <name>', `${ENV_HELP}; give the same names again with --resume`, collect)
    .option('--max-turns <n>', MAX_TURNS_HELP, integer(1))
    .option('-k, --trials <k>', 'trials per task', integer(1), 1)
    .option('-c, --concurrency <n>', 'rollouts at once (agents mostly wait on models)', integer(1), DEFAULT_EVAL_CONCURRENCY)
    .option('-t, --task <id>', 'only tasks with this id or glob, e.g. "retail/test/*" (repeatable)', collect)
    .option('--tag <tag>', 'only tasks with this tag (repeatable; ANDed with --task)', collect)
    .addOption(new Option('-r, --reporter <name>', 'report format').choices(REPORTERS).default('default'))
    .option('--output <file>', 'write the report to a file instead of stdout')
    .option('--resume <evalId>', 'continue an eval: same options, only the runs not yet finished')
    .option('--eval-id <id>', "the new eval's id (letters, digits, . _ -) instead of a fresh ULID; give the shards of one split the same id")
    .option('--queue <url>', 'run the rollouts on `silo worker` processes through this Redis, e.g. redis://10.0.0.5:6379 (this process coordinates)')
    .option('--shard <i/n>', 'run only shard i of n: the (task, trial) pairs numbered i-1 modulo n, in trial-major order; combine with `silo merge`', parseShard)
    .option('--min-pass-rate <r>', 'exit 0 when the pass rate reaches r (0..1), even if some runs failed', rate)
    .option('--retries <n>', 'retries of a run lost to infrastructure (crashed worker, internal error)', integer(0), DEFAULT_RETRIES)
    .option('--reuse-workers', 'reuse warm workers across rollouts (faster; trusted agents only: globals leak)')
    .option('--isolation <mode>', ISOLATION_HELP, isolation, 'process')
    .option('--no-network', NO_NETWORK_HELP)
    .option('--report', 'also write the HTML report (see `silo report`) to <out>/evals/<evalId>/report.html')
    .option('--timeout <ms>', 'wall-clock limit per rollout, ms', integer(1))
    .option('--max-tool-calls <n>', 'tool calls allowed per rollout', integer(0))
    .option('--memory <mb>', 'heap limit of each agent worker, MiB', integer(0))
    .option('-o, --out <dir>', 'artifact folder: <dir>/runs/ and <dir>/evals/<evalId>/', '.silo')
    .addHelpText(
      'after',
      '\nProgress goes to stderr, the report to stdout (or --output). Ctrl-C stops cleanly (exit 130);\n' +
        'a second Ctrl-C exits at once. Exit codes: 0 all passed (or --min-pass-rate reached), 1 otherwise,\n' +
        '2 usage or set-up error.\n' +
        'Examples:\n  silo eval fixtures/helpdesk --agent fixtures/agents/helpdesk-solver.ts --trials 4\n' +
        '  ANTHROPIC_BASE_URL=http://127.0.0.1:4000 silo eval fixtures/helpdesk --agent anthropic:claude-sonnet-4-5 --trials 4\n' +
        'On many machines: start `silo worker --queue redis://HOST:6379` on each, then\n' +
        '  silo eval fixtures/helpdesk --agent my-agent.ts --queue redis://HOST:6379\n' +
        'A CI matrix of three machines, then one summary:\n' +
        '  silo eval fixtures/helpdesk --agent my-agent.ts --shard 2/3 --eval-id "ci-$RUN_ID" --out shard-2\n' +
        '  silo merge shard-1 shard-2 shard-3',
    )
    .action(async (paths: string[], flags: EvalFlags, command: Command) => {
      if (flags.resume !== undefined) refuseWithResume(paths, command);
      // With --queue, the workers set the pace: every pair goes on the queue unless -c says otherwise.
      const concurrency = flags.queue !== undefined && command.getOptionValueSource('concurrency') !== 'cli' ? undefined : flags.concurrency;
      process.exitCode = await evalCommand(paths, flags, concurrency);
    });
  modelOptions(command);
}

/** Options an eval stores and `--resume` reuses: giving them again would be silently ignored. */
const STORED = ['agent', 'trials', 'task', 'tag', 'retries', 'reuseWorkers', 'timeout', 'maxToolCalls', 'memory', 'maxTurns', 'shard', 'evalId', 'provider', 'maxModelRequests', 'maxTokens'] as const;

function refuseWithResume(paths: string[], command: Command): void {
  const given = STORED.filter((key) => command.getOptionValueSource(key) === 'cli').map((key) => `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`);
  if (paths.length > 0) given.unshift('task paths');
  if (given.length > 0) {
    throw new SiloError(
      'SILO_USAGE',
      `--resume keeps the eval's stored options, so ${given.join(', ')} cannot be given with it (--concurrency, --reporter, --output, --report, --min-pass-rate, --out, --queue and the --model-cache/--model-concurrency flags can)`,
    );
  }
}

/** Parses --min-pass-rate. */
export function rate(value: string): number {
  const n = value.trim() === '' ? Number.NaN : Number(value);
  if (!(n >= 0 && n <= 1)) throw new SiloError('SILO_USAGE', `--min-pass-rate takes a number from 0 to 1 (got '${value}')`);
  return n;
}

async function evalCommand(paths: string[], flags: EvalFlags, concurrency: number | undefined): Promise<number> {
  if (flags.resume === undefined) {
    if (paths.length === 0) throw new SiloError('SILO_USAGE', 'give task files or folders, e.g. `silo eval fixtures/helpdesk --agent my-agent.ts`');
    if (!flags.agent) throw new SiloError('SILO_USAGE', "required option '--agent <file>' not specified");
  }
  if (flags.queue !== undefined && (flags.modelCache !== undefined || flags.modelConcurrency !== undefined)) {
    throw new SiloError('SILO_USAGE', '--model-cache and --model-concurrency apply to the gateway of the machine that runs the rollouts; with --queue the workers call the models with their own gateways, which do not take them yet');
  }
  const limits = limitsFromFlags(flags);
  // A resumed eval runs its stored agent, which decides the built-in variables it gets.
  const agent = flags.resume === undefined ? flags.agent! : new EvalStore(flags.out, flags.resume).readSummary().options.agent;
  const env = agentEnv(agent, flags.env ?? [], process.env);
  const agentOptions = agentOptionsFromFlags(flags);

  const printer = progressPrinter(process.stderr);
  const cancel = new AbortController();
  const stopListening = onInterrupt(() => cancel.abort());
  let summary: EvalSummary;
  try {
    summary = await runEval({
      paths,
      trials: flags.trials,
      ...(concurrency === undefined ? {} : { concurrency }),
      retries: flags.retries,
      limits,
      env,
      ...(agentOptions ? { agentOptions } : {}),
      outDir: flags.out,
      signal: cancel.signal,
      onProgress: (p) => printer.update(p),
      ...(flags.agent ? { agent: flags.agent } : {}),
      ...(flags.provider ? { providers: flags.provider } : {}),
      ...(flags.modelConcurrency === undefined ? {} : { modelConcurrency: flags.modelConcurrency }),
      ...(flags.modelCache === undefined ? {} : { modelCache: flags.modelCache, modelCacheMode: flags.modelCacheMode ?? 'readwrite' }),
      ...(flags.task ? { task: flags.task } : {}),
      ...(flags.tag ? { tag: flags.tag } : {}),
      ...(flags.resume ? { resume: flags.resume } : {}),
      ...(flags.reuseWorkers ? { reuseWorkers: true } : {}),
      isolation: flags.isolation,
      ...(flags.network ? {} : { noNetwork: true }),
      ...(flags.evalId === undefined ? {} : { evalId: flags.evalId }),
      ...(flags.shard ? { shard: flags.shard } : {}),
      ...(flags.queue === undefined ? {} : { runner: queueRunner({ url: flags.queue }) }),
    });
  } finally {
    stopListening();
    printer.done();
  }
  printReport(summary, flags);
  if (flags.report) {
    const written = await writeReport({ evalId: summary.evalId, outDir: flags.out });
    process.stderr.write(`HTML report written to ${written.file}\n`);
  }
  return exitCode(summary, flags.minPassRate);
}

/** The report of an eval, as `--reporter` and `--output` ask (`silo merge` prints the same). */
export function printReport(summary: EvalSummary, flags: { reporter: ReporterName; output?: string; out: string }): void {
  const report =
    flags.reporter === 'json'
      ? `${JSON.stringify(summary, null, 2)}\n`
      : flags.reporter === 'junit'
        ? junitReport(summary, new EvalStore(flags.out, summary.evalId).readLines())
        : `${tableReport(summary, createStyle(flags.output ? { isTTY: false } : process.stdout))}\n`;
  if (flags.output) {
    writeFileSync(flags.output, report);
    if (flags.reporter !== 'default') process.stdout.write(`${tableReport(summary, createStyle(process.stdout))}\n`);
    process.stderr.write(`report written to ${flags.output}\n`);
  } else {
    process.stdout.write(report);
  }
}

/** 130 when cancelled; 0 when every run passed or the pass rate reached the minimum; else 1. */
export function exitCode(summary: EvalSummary, minPassRate: number | undefined): number {
  if (summary.status === 'cancelled') return 130;
  const t = summary.totals;
  if (minPassRate !== undefined) return (t.passRate ?? 0) >= minPassRate ? 0 : 1;
  return t.failed === 0 && t.errors === 0 && t.runs > 0 ? 0 : 1;
}
