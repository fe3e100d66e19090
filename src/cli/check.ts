/** `silo check`: lints task files; the report on stdout, progress on stderr. */
import type { Command } from 'commander';
import { CHECK_DEFAULTS } from '../options.js';
import type { CheckProgress, CheckReport } from '../check/types.js';
import { linePrinter, type ProgressPrinter } from '../eval/progress.js';
import { createStyle } from '../inspect/style.js';
import { collect, integer } from './options.js';
import { onInterrupt } from './signals.js';

interface CheckFlags {
  task?: string[];
  tag?: string[];
  concurrency: number;
  seed: number;
  json?: boolean;
}

const HELP = `
What is checked, once per environment (each distinct environment object among the tasks):
  fresh worlds          createState() is called twice; no object, however deeply nested, may be
                        reachable from both worlds, or one rollout's changes would reach the next.
                        Fix: return a deep copy, e.g. createState: () => structuredClone(seed).
                        (An object held at two paths of one world is a warning.)
  deterministic worlds  the two worlds, built with the same seed, must be deep-equal: draw from
                        ctx.random() and ctx.now(), never Math.random() or Date.now().
  tool schemas          every inputSchema compiles under ajv's strict mode (an unknown or misspelt
                        keyword such as "minLenght" is an error); tool names are unique; every tool
                        has a description.
and once per task:
  do-nothing agent      a real rollout with a built-in agent that makes no tool calls and answers
                        "I did not do anything." must fail the task. A task it passes is a warning:
                        its verifier may not check what the instruction asks. A rollout that cannot
                        be graded (the verifier throws, say) is an error.
  solutions             a task's solution, if it has one, is replayed on a fresh world (its calls in
                        order through the usual validation, its output as the answer) and must pass
                        the verifier. A call to an unknown tool or with an input the schema refuses is
                        an error; a call whose tool throws is a warning, and the replay goes on.

Nothing is written to .silo: the rollouts use a temporary folder that is removed afterwards.
Exit codes: 0 no errors (warnings allowed), 1 at least one error, 2 usage or set-up error
(a task file that does not load, say).
Example, on the files \`npx silo init\` writes (evals/):
  silo check evals/tasks.ts`;

export function registerCheck(program: Command): void {
  program
    .command('check')
    .description('lint tasks: fresh and deterministic worlds, strict schemas, a do-nothing agent fails, solutions pass')
    .argument('<task-files...>', 'task modules (.js, .mjs, .ts), or folders holding tasks.*, *.task.* or *.tasks.* files')
    .option('-t, --task <id>', 'only tasks with this id or glob (repeatable)', collect)
    .option('--tag <tag>', 'only tasks with this tag (repeatable; ANDed with --task)', collect)
    .option('-c, --concurrency <n>', 'tasks checked at once', integer(1), CHECK_DEFAULTS.concurrency)
    .option('--seed <n>', 'seed of ctx.random() for every world the checks build', integer(0), CHECK_DEFAULTS.seed)
    .option('--json', 'print the report as JSON: { tasks, environments, checks, errors, warnings, ... }')
    .addHelpText('after', HELP)
    .action(async (files: string[], flags: CheckFlags) => {
      process.exitCode = await checkCommand(files, flags);
    });
}

async function checkCommand(files: string[], flags: CheckFlags): Promise<number> {
  const printer = progressPrinter(process.stderr);
  const cancel = new AbortController();
  const stopListening = onInterrupt(() => cancel.abort());
  let report: CheckReport;
  const [{ checkTasks }, { formatReport }] = await Promise.all([import('../check/check.js'), import('../check/format.js')]);
  try {
    report = await checkTasks(files, {
      concurrency: flags.concurrency,
      seed: flags.seed,
      signal: cancel.signal,
      onProgress: (p) => printer.update(p),
      ...(flags.task ? { task: flags.task } : {}),
      ...(flags.tag ? { tag: flags.tag } : {}),
    });
  } finally {
    stopListening();
    printer.done();
  }
  process.stdout.write(flags.json ? `${JSON.stringify(report, null, 2)}\n` : `${formatReport(report, createStyle(process.stdout))}\n`);
  if (report.cancelled) return 130;
  return report.errors.length > 0 ? 1 : 0;
}

/** A live line on a terminal; elsewhere a plain line every few seconds (short checks print none). */
function progressPrinter(stream: NodeJS.WriteStream): ProgressPrinter<CheckProgress> {
  const format = (p: CheckProgress): string => `checked ${p.done}/${p.total} tasks · ${Math.round(p.elapsedMs / 1000)}s`;
  return linePrinter(stream, format, { finished: (p) => p.done >= p.total, quietStart: true });
}
