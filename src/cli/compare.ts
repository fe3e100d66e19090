/** `silo compare`: two evals task by task, with Fisher's exact test, Holm's correction and a bootstrap interval. */
import type { Command } from 'commander';
import { DEFAULT_COMPARE_SEED, DEFAULT_RESAMPLES } from '../options.js';
import { createStyle } from '../inspect/style.js';
import { integer } from './options.js';

interface CompareFlags {
  out: string;
  json?: boolean;
  output?: string;
  all?: boolean;
  seed: number;
  resamples: number;
}

export function registerCompare(program: Command): void {
  program
    .command('compare')
    .description('compare two evals task by task: did a change help, or did it break something?')
    .argument('<evalA>', 'the baseline: an evalId, a unique prefix or suffix of one, or an eval folder')
    .argument('<evalB>', 'the eval to judge against it')
    .option('-o, --out <dir>', 'artifact folder to look in', '.silo')
    .option('--json', 'print the comparison as JSON: { a, b, tasks, onlyA, onlyB, overall }')
    .option('--output <file>', 'also write the comparison as one offline HTML page, e.g. compare.html')
    .option('--all', 'list every task, also those with the same pass rate in both')
    .option('--seed <n>', 'seed of the bootstrap interval', integer(0), DEFAULT_COMPARE_SEED)
    .option('--resamples <n>', 'bootstrap resamples', integer(1), DEFAULT_RESAMPLES)
    .addHelpText(
      'after',
      '\nPer task: graded runs and passes in A and B, the difference of pass rates, Fisher\'s exact two-sided\n' +
        "p-value on the 2×2 table, and a verdict: regressed or improved when the p-value after Holm's\n" +
        'correction across tasks is under 0.05, else same. Overall: the difference of mean per-task pass\n' +
        'rates with a 95% bootstrap interval over tasks (seeded: the same evals give the same interval).\n' +
        'Exit codes: 1 when a task regressed, 0 otherwise, 2 usage error.\n' +
        'Example:\n  silo compare 01JBASELINE 01JCANDIDATE --output compare.html',
    )
    .action(async (a: string, b: string, flags: CompareFlags) => {
      const [{ compareEvals }, { compareTable }] = await Promise.all([import('../eval/compare-evals.js'), import('../eval/compare-table.js')]);
      const comparison = compareEvals({ a, b, outDir: flags.out, seed: flags.seed, resamples: flags.resamples });
      if (flags.json) process.stdout.write(`${JSON.stringify(comparison, null, 2)}\n`);
      else process.stdout.write(`${compareTable(comparison, createStyle(process.stdout), { all: flags.all === true })}\n`);
      if (flags.output !== undefined) {
        const { writeComparePage } = await import('../inspect/compare-page.js');
        const file = await writeComparePage(comparison, flags.output);
        process.stderr.write(`comparison written to ${file}\n`);
      }
      process.exitCode = comparison.overall.regressed.length > 0 ? 1 : 0;
    });
}
