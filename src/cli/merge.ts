/** `silo merge`: the output folders of `silo eval --shard i/n` runs, combined into one eval. */
import { Option, type Command } from 'commander';
import { REPORTERS, type ReporterName } from '../eval/reporters.js';
import { exitCode, printReport, rate } from './eval.js';

interface MergeFlags {
  out: string;
  evalId?: string;
  reporter: ReporterName;
  output?: string;
  minPassRate?: number;
}

export function registerMerge(program: Command): void {
  program
    .command('merge')
    .description('combine the shards of an eval (silo eval --shard i/n) into one summary with the statistics of an unsharded eval')
    .argument('<dirs...>', 'the --out folder of each shard (or its eval folder, <out>/evals/<evalId>)')
    .option('-o, --out <dir>', 'where the merged eval goes: <dir>/evals/<evalId>/, run folders copied to <dir>/runs/', '.silo')
    .option('--eval-id <id>', "the merged eval's id (default: the shards' evalId if they share one, else a fresh ULID)")
    .addOption(new Option('-r, --reporter <name>', 'report format').choices(REPORTERS).default('default'))
    .option('--output <file>', 'write the report to a file instead of stdout (for -r json and junit, stdout still shows the table)')
    .option('--min-pass-rate <r>', 'exit 0 when the pass rate reaches r (0..1), even if some runs failed', rate)
    .addHelpText(
      'after',
      '\nEvery shard 1..n must be given once, finished (status completed), with the same tasks, trials,\n' +
        'filters, limits and agent file name. The merged summary is recomputed from the shards\' runs.\n' +
        'Exit codes as for `silo eval`: 0 all passed (or --min-pass-rate reached), 1 otherwise, 2 usage error.\n' +
        'Example:\n  silo merge shard-1 shard-2 shard-3 --out merged',
    )
    .action(async (dirs: string[], flags: MergeFlags) => {
      const { mergeEvals } = await import('../eval/merge.js');
      const summary = await mergeEvals({ dirs, outDir: flags.out, ...(flags.evalId === undefined ? {} : { evalId: flags.evalId }) });
      await printReport(summary, flags);
      process.exitCode = exitCode(summary, flags.minPassRate);
    });
}
