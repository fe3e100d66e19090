/** `silo eval`: every task × k trials in parallel, with progress, a report and an exit code. */
import { Option, type Command } from 'commander';
import { writeFileSync } from 'node:fs';
import { SiloError } from '../errors.js';
import { progressPrinter } from '../eval/progress.js';
import { junitReport, plural, REPORTERS, tableReport, type ReporterName } from '../eval/reporters.js';
import { parseShard, type Shard } from '../eval/shard.js';
import { DEFAULT_EVAL_CONCURRENCY, DEFAULT_OUT_DIR, DEFAULT_RETRIES } from '../options.js';
import type { EvalSummary } from '../types.js';
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
import { resolve } from 'node:path';
import type { Isolation } from '../pool/pool.js';
import { onInterrupt } from './signals.js';
import { createStyle } from '../inspect/style.js';

interface EvalFlags extends ModelFlags, UserFlags {
  agent?: string;
  isolation: Isolation;
  network: boolean;
  env?: string[];
  maxTurns?: number;
  trials: number;
  concurrency?: number;
  task?: string[];
  tag?: string[];
  reporter: ReporterName;
  output?: string;
  resume?: string;
  evalId?: string;
  shard?: Shard;
  queue?: string;
  strict?: boolean;
  minPassRate?: number;
  baseline?: string;
  failOnRegression?: boolean;
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
    .option('-c, --concurrency <n>', `rollouts at once (agents mostly wait on models; default ${DEFAULT_EVAL_CONCURRENCY}, or the resumed eval's)`, integer(1))
    .option('-t, --task <id>', 'only tasks with this id or glob, e.g. "retail/test/*" (repeatable)', collect)
    .option('--tag <tag>', 'only tasks with this tag (repeatable; ANDed with --task)', collect)
    .addOption(new Option('-r, --reporter <name>', 'report format').choices(REPORTERS).default('default'))
    .option('--output <file>', 'write the report to a file instead of stdout (for -r json and junit, stdout still shows the table)')
    .option('--resume <evalId>', 'continue an eval (its id, or a unique prefix or suffix): same options, only the runs not yet finished')
    .option('--eval-id <id>', "the new eval's id (letters, digits, . _ -) instead of a fresh ULID; give the shards of one split the same id")
    .option('--queue <url>', 'run the rollouts on `silo worker` processes through this Redis, e.g. redis://10.0.0.5:6379 (this process coordinates)')
    .option('--shard <i/n>', "run only shard i of n: each task's trials dealt round the shards (trial j of task t goes to shard (t + j) mod n + 1); combine with `silo merge`", parseShard)
    .option('--min-pass-rate <r>', 'exit 0 when the pass rate reaches r (0..1), even if some runs failed', rate)
    .option('--baseline <evalId>', 'afterwards, compare with this earlier eval task by task (see `silo compare`); stored in summary.json')
    .option('--fail-on-regression', 'exit 1 when a task regressed against --baseline, whatever the pass rate')
    .option('--strict', STRICT_HELP)
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
      '\nProgress goes to stderr, the report to stdout (or --output). Ctrl-C stops cleanly (exit 130) and\n' +
        'prints the --resume command; a second Ctrl-C exits at once. With --min-pass-rate, exit 0 once the\n' +
        `pass rate reaches it.\n${EXIT_CODES_HELP}\n` +
        `${INIT_EXAMPLES_HELP}\n` +
        '  silo eval evals --agent evals/agents/solver.ts --trials 4\n' +
        '  ANTHROPIC_BASE_URL=http://127.0.0.1:4000 silo eval evals --agent anthropic:claude-sonnet-4-5 --trials 4\n' +
        'On many machines: start `silo worker --queue redis://HOST:6379` on each, then\n' +
        '  silo eval evals --agent evals/agents/llm.ts --provider openai --queue redis://HOST:6379\n' +
        'In CI, against the last good eval:\n' +
        '  silo eval evals --agent evals/agents/llm.ts --provider openai --trials 8 --baseline 01JGOOD --fail-on-regression\n' +
        'A CI matrix of three machines, then one summary:\n' +
        '  silo eval evals --agent evals/agents/llm.ts --provider openai --shard 2/3 --eval-id "ci-$RUN_ID" --out shard-2\n' +
        '  silo merge shard-1 shard-2 shard-3',
    )
    .action(async (paths: string[], flags: EvalFlags, command: Command) => {
      if (flags.resume !== undefined) refuseWithResume(paths, command);
      // Not given: a local eval runs DEFAULT_EVAL_CONCURRENCY at once, a resumed eval what it was
      // given, and with --queue the workers set the pace (every pair goes on the queue).
      process.exitCode = await evalCommand(paths, flags, flags.concurrency);
    });
  modelOptions(command);
  userOptions(command);
}

/** Options an eval stores and `--resume` reuses: giving them again would be silently ignored. */
const STORED = ['agent', 'trials', 'task', 'tag', 'retries', 'reuseWorkers', 'timeout', 'maxToolCalls', 'memory', 'maxTurns', 'shard', 'evalId', 'strict', 'provider', 'maxModelRequests', 'maxTokens', 'user', 'solo'] as const;

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
    if (paths.length === 0) throw new SiloError('SILO_USAGE', 'give task files or folders, e.g. `silo eval evals --agent evals/agents/solver.ts` (what `silo init` writes)');
    requireAgent(flags.agent, 'eval');
  }
  if (flags.user !== undefined && flags.solo) {
    throw new SiloError('SILO_USAGE', '--user and --solo contradict each other: --user has a model play the user, --solo runs without one; drop one');
  }
  if (flags.failOnRegression && flags.baseline === undefined) {
    throw new SiloError('SILO_USAGE', '--fail-on-regression needs --baseline <evalId>: the eval to compare with');
  }
  if (flags.queue !== undefined && (flags.modelCache !== undefined || flags.modelConcurrency !== undefined)) {
    throw new SiloError('SILO_USAGE', '--model-cache and --model-concurrency apply to the gateway of the machine that runs the rollouts; with --queue the workers call the models with their own gateways, which do not take them yet');
  }
  const limits = limitsFromFlags(flags);
  // What an eval needs, imported when it runs (the queue only with --queue).
  const [{ runEval, localRunner }, { EvalStore }, { resolveEvalId }, { agentEnv }, queue, { takeEarlyEval }] = await Promise.all([
    import('../eval/run-eval.js'),
    import('../eval/store.js'),
    import('../inspect/runs.js'),
    import('../agents/builtin.js'),
    flags.queue === undefined ? undefined : import('../queue/coordinator.js'),
    import('./run-early.js'),
  ]);
  // A resumed eval runs its stored agent, which decides the built-in variables it gets.
  const resumed = flags.resume === undefined ? undefined : resolveEvalId(flags.resume, resolve(flags.out));
  const agent = resumed === undefined ? flags.agent! : new EvalStore(resolve(flags.out), resumed).readSummary().options.agent;
  const env = agentEnv(agent, flags.env ?? [], process.env);
  const agentOptions = agentOptionsFromFlags(flags);

  const printer = progressPrinter(process.stderr);
  const cancel = new AbortController();
  let evalId: string | undefined = resumed;
  const stopListening = onInterrupt(
    () => cancel.abort(),
    () => (evalId === undefined ? undefined : `silo: continue with: silo eval --resume ${evalId}${outFlag(flags.out)}${flags.queue === undefined ? '' : ` --queue ${quote(flags.queue)}`}`),
  );
  let summary: EvalSummary;
  let early: Awaited<ReturnType<typeof takeEarlyEval>>;
  try {
    // The sandbox started before the flags were parsed (run-early.ts), if it is the one this eval
    // runs its rollouts in: a new eval, here, with the agent, network, concurrency and reuse it
    // was started for. Otherwise it is ended, and the eval starts its own.
    const local = flags.resume === undefined && flags.queue === undefined;
    early = await takeEarlyEval({
      agentFile: local && flags.agent && !/^(openai|anthropic):/.test(flags.agent) ? resolve(flags.agent) : undefined,
      isolation: flags.isolation,
      noNetwork: !flags.network,
      concurrency: concurrency ?? DEFAULT_EVAL_CONCURRENCY,
      reuse: flags.reuseWorkers === true,
    });
    const taken = early;
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
      onProgress: (p) => {
        evalId = p.evalId;
        printer.update(p);
      },
      ...(flags.agent ? { agent: flags.agent } : {}),
      ...(flags.provider ? { providers: flags.provider } : {}),
      ...(flags.modelConcurrency === undefined ? {} : { modelConcurrency: flags.modelConcurrency }),
      ...(flags.modelCache === undefined ? {} : { modelCache: flags.modelCache, modelCacheMode: flags.modelCacheMode ?? 'readwrite' }),
      ...(flags.task ? { task: flags.task } : {}),
      ...(flags.tag ? { tag: flags.tag } : {}),
      ...(resumed ? { resume: resumed } : {}),
      ...(flags.strict ? { strict: true } : {}),
      ...(flags.user === undefined ? {} : { user: flags.user }),
      ...(flags.solo ? { solo: true } : {}),
      onNote: (message) => process.stderr.write(`note: ${message}\n`),
      ...(flags.reuseWorkers ? { reuseWorkers: true } : {}),
      isolation: flags.isolation,
      ...(flags.network ? {} : { noNetwork: true }),
      ...(flags.evalId === undefined ? {} : { evalId: flags.evalId }),
      ...(flags.shard ? { shard: flags.shard } : {}),
      ...(flags.queue === undefined || !queue ? {} : { runner: queue.queueRunner({ url: flags.queue }) }),
      // Its agent prepared early too (as for `--trials` rollouts), unless the eval's size calls
      // for preparing it otherwise (localRunner decides).
      ...(taken
        ? { runner: (context) => Promise.resolve(localRunner(context, taken.pool, concurrency ?? DEFAULT_EVAL_CONCURRENCY, { prepared: taken.prepared, rollouts: taken.trials })) }
        : {}),
      ...(flags.baseline === undefined ? {} : { baseline: flags.baseline }),
    });
  } finally {
    stopListening();
    printer.done();
    // (ended by the eval's runner as it closes; here also when the eval failed before making it)
    await early?.pool.destroy();
  }
  await printReport(summary, flags);
  if (summary.baseline) {
    const { baselineLines } = await import('../eval/compare-table.js');
    // Under the table; off stdout when stdout carries JSON or XML.
    const stream = flags.reporter !== 'default' && !flags.output ? process.stderr : process.stdout;
    stream.write(`${baselineLines(summary.evalId, summary.baseline, createStyle(stream)).join('\n')}\n`);
  }
  if (flags.report) {
    const { writeReport } = await import('../inspect/report.js');
    const written = await writeReport({ evalId: summary.evalId, outDir: flags.out });
    process.stderr.write(`HTML report written to ${written.file}\n`);
  }
  const regressed = flags.failOnRegression === true && summary.status !== 'cancelled' && (summary.baseline?.regressed.length ?? 0) > 0;
  const code = regressed ? 1 : exitCode(summary, flags.minPassRate);
  process.stderr.write(await nextSteps(summary, code, flags));
  return code;
}

/**
 * What to type next, on stderr (stdout holds the report): after a cancel, the command that
 * continues the eval; after a failure, the first failed run to read and the report; after a pass
 * with suspicious runs, the first of them. Runs that the agent's model provider failed
 * (model_error) are said first, with the resume that runs them again.
 */
export async function nextSteps(summary: EvalSummary, code: number, flags: { out: string; report?: boolean; queue?: string }): Promise<string> {
  const out = outFlag(flags.out);
  if (summary.status === 'cancelled') {
    const queue = flags.queue === undefined ? '' : ` --queue ${quote(flags.queue)}`;
    return `silo: cancelled; continue with: silo eval --resume ${summary.evalId}${out}${queue}\n`;
  }
  const { EvalStore } = await import('../eval/store.js');
  const { asCounted } = await import('../eval/counted.js');
  const lines = asCounted([...new EvalStore(resolve(flags.out), summary.evalId).readLines()]).filter((l) => !l.retried && l.termination !== 'cancelled');
  const failed = lines.find((l) => l.status !== 'passed');
  const suspicious = lines.find((l) => l.status === 'passed' && l.suspicious !== undefined);
  const steps: string[] = [];
  if (code !== 0 && failed) steps.push(`silo show ${failed.runId}${out}   (the first run that ${failed.status === 'error' ? 'ended in error' : 'failed'})`);
  else if (suspicious) steps.push(`silo show ${suspicious.runId}${out}   (the first suspicious pass)`);
  if (steps.length > 0 && !flags.report) steps.push(`silo report ${summary.evalId}${out}   (every run, in the browser)`);
  // The agent's model failing on the provider's side is the user's to fix before anything else;
  // once fixed, a resume runs those runs again.
  const modelErrors = lines.filter((l) => l.error?.code === 'model_error');
  const queue = flags.queue === undefined ? '' : ` --queue ${quote(flags.queue)}`;
  if (modelErrors.length > 0) steps.unshift(`silo eval --resume ${summary.evalId}${out}${queue}   (runs the ${plural(modelErrors.length, 'run')} again, once that is fixed)`);
  const said = modelErrors.length === 0 ? '' : `silo: ${plural(modelErrors.length, 'run')} ended in error (model_error), the first because ${modelErrors[0]!.error!.message}\n`;
  return said + steps.map((step) => `→ ${step}\n`).join('');
}

/** ` --out <dir>` when it is not the default, for commands to copy. */
function outFlag(dir: string): string {
  return resolve(dir) === resolve(DEFAULT_OUT_DIR) ? '' : ` --out ${quote(dir)}`;
}

function quote(text: string): string {
  return /^[\w@%+=:,./-]+$/.test(text) ? text : `'${text.replace(/'/g, `'\\''`)}'`;
}

/** The report of an eval, as `--reporter` and `--output` ask (`silo merge` prints the same). */
export async function printReport(summary: EvalSummary, flags: { reporter: ReporterName; output?: string; out: string }): Promise<void> {
  const { EvalStore } = await import('../eval/store.js');
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
