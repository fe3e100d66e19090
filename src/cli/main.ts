/** The `silo` command: commander wiring only; every command calls the programmatic API. */
import { Command, CommanderError } from 'commander';
import { describeError, SiloError } from '../errors.js';
import { SILO_VERSION } from '../paths.js';
import { shutdown } from '../shutdown.js';
import { registerCheck } from './check.js';
import { registerCompare } from './compare.js';
import { registerEval } from './eval.js';
import { registerInit } from './init.js';
import { registerLs } from './ls.js';
import { registerReport } from './report.js';
import { registerMerge } from './merge.js';
import { registerRegrade } from './regrade.js';
import { registerRun } from './run.js';
import { registerServe } from './serve.js';
import { registerShow } from './show.js';
import { registerTools } from './tools.js';
import { registerWorker } from './worker.js';

export function createProgram(): Command {
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
      '\nArtifacts go to .silo/runs/<runId>/ (run.json, trace.jsonl, state-diff.json, result.json).\n' +
        'Exit codes: 0 all passed, 1 something failed, 2 usage or set-up error.\n' +
        'Start with: silo init (a working example in evals/), then the commands it prints.',
    );
  registerInit(program);
  registerRun(program);
  registerEval(program);
  registerShow(program);
  registerReport(program);
  registerTools(program);
  registerCheck(program);
  registerLs(program);
  registerServe(program);
  registerMerge(program);
  registerRegrade(program);
  registerCompare(program);
  registerWorker(program);
  for (const command of program.commands) command.exitOverride();
  return program;
}

/** Runs the CLI; resolves to the exit code. */
export async function main(argv: string[]): Promise<number> {
  // Commands set process.exitCode; left unset, a hang that empties the event loop shows as 13.
  process.exitCode = undefined;
  try {
    await createProgram().parseAsync(argv, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      // Commander has already printed the message (or the help).
      return err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help' ? 0 : 2;
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
