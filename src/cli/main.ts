/** The `silo` command: commander wiring only; every command calls the programmatic API. */
import { Command, CommanderError } from 'commander';
import { describeError, SiloError } from '../errors.js';
import { SILO_VERSION } from '../paths.js';
import { shutdown } from '../shutdown.js';

/** Each command's definition, in the order `--help` lists them, loaded when needed. */
const COMMANDS: [string, () => Promise<(program: Command) => void>][] = [
  ['init', async () => (await import('./init.js')).registerInit],
  ['run', async () => (await import('./run.js')).registerRun],
  ['eval', async () => (await import('./eval.js')).registerEval],
  ['show', async () => (await import('./show.js')).registerShow],
  ['report', async () => (await import('./report.js')).registerReport],
  ['tools', async () => (await import('./tools.js')).registerTools],
  ['check', async () => (await import('./check.js')).registerCheck],
  ['ls', async () => (await import('./ls.js')).registerLs],
  ['serve', async () => (await import('./serve.js')).registerServe],
  ['merge', async () => (await import('./merge.js')).registerMerge],
  ['regrade', async () => (await import('./regrade.js')).registerRegrade],
  ['compare', async () => (await import('./compare.js')).registerCompare],
  ['worker', async () => (await import('./worker.js')).registerWorker],
];

/**
 * The program with the commands `argv` needs: the one it names (`silo run ...` defines `run`
 * only, so a command starts without loading the others' modules), none for `--version` (the
 * program's own option: commander answers it before any command), or all of them (`silo`,
 * `--help`, a mistyped command, which commander then matches against every name).
 */
export async function createProgram(argv: readonly string[] = []): Promise<Command> {
  const named = COMMANDS.find(([name]) => name === argv[0]);
  const wanted = named ? [named] : argv[0] === '--version' || argv[0] === '-v' ? [] : COMMANDS;
  const registers = await Promise.all(wanted.map(([, load]) => load()));
  const program = new Command()
    .name('silo')
    .description('Grade AI agents inside in-memory simulated worlds.')
    .version(SILO_VERSION, '-v, --version')
    .showSuggestionAfterError()
    // One prefix for every error, commander's own ("error: unknown option") and Silo's.
    .configureOutput({ outputError: (text, write) => write(text.replace(/^error: /, 'silo: ')) })
    .exitOverride()
    .addHelpText(
      'after',
      '\nArtifacts go to .silo/runs/<runId>/ (run.json, trace.jsonl, state-diff.json, result.json, and\n' +
        'models.jsonl when the agent or its simulated user called a model).\n' +
        'Exit codes: 0 all passed, 1 something failed, 2 usage or set-up error.\n' +
        'Start with: silo init (a working example in evals/), then the commands it prints.',
    );
  for (const register of registers) register(program);
  for (const command of program.commands) command.exitOverride();
  return program;
}

/** Runs the CLI; resolves to the exit code. */
export async function main(argv: string[]): Promise<number> {
  // Commands set process.exitCode; left unset, a hang that empties the event loop shows as 13.
  process.exitCode = undefined;
  try {
    // The sandbox of `silo run` and `silo eval` boots while commander and the command load (run-early.ts).
    if (argv[0] === 'run') await (await import('./run-early.js')).startEarlyRun(argv.slice(1));
    else if (argv[0] === 'eval') await (await import('./run-early.js')).startEarlyEval(argv.slice(1));
    await (await createProgram(argv)).parseAsync(argv, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Commander has already printed the message (or the help). Help asked for (`--help`, `silo help`)
      // exits 0; help printed because no command was given (on stderr) is a usage error, as an
      // unknown command is.
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version') return 0;
      return err.code === 'commander.help' && err.exitCode === 0 ? 0 : 2;
    }
    if (err instanceof SiloError) {
      process.stderr.write(`silo: ${err.message}\n`);
      return 2;
    }
    const message = describeError(err);
    process.stderr.write(`silo: internal error: ${message}\n`);
    if (process.env.SILO_DEBUG && err instanceof Error) process.stderr.write(`${err.stack}\n`);
    else process.stderr.write('silo: set SILO_DEBUG=1 for the stack trace, and please report it\n');
    return 2;
  } finally {
    await shutdown();
  }
}
