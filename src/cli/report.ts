/** `silo report`: an eval as one self-contained HTML file. */
import type { Command } from 'commander';
import { DEFAULT_REPORT_LIMITS } from '../options.js';
import { integer } from './options.js';

interface ReportFlags {
  out: string;
  output?: string;
  details?: number;
}

export function registerReport(program: Command): void {
  program
    .command('report')
    .description('write an eval as one HTML file: summary, charts, filterable runs, each run\'s timeline and checks')
    .argument('[eval]', 'an evalId, a unique prefix or suffix of one, or an eval folder (default: the latest eval)')
    .option('-o, --out <dir>', 'artifact folder to look in', '.silo')
    .option('--output <file>', 'where to write the page (default: <out>/evals/<evalId>/report.html)')
    .option('--details <n>', `runs whose full detail goes in the page, failed first (default ${DEFAULT_REPORT_LIMITS.maxDetailRuns})`, integer(0))
    .addHelpText(
      'after',
      '\nThe page needs no network: open it from disk in any browser. Every run gets a row; the full detail\n' +
        `(timeline, changes, checks) of at most --details runs and ${DEFAULT_REPORT_LIMITS.maxDetailBytes / 2 ** 20} MiB goes in, failed and errored runs first,\n` +
        `each value cut at ${DEFAULT_REPORT_LIMITS.maxValueChars} characters; \`silo show <runId>\` prints any run in full.\n` +
        'Example:\n  silo report --output eval.html',
    )
    .action(async (ref: string | undefined, flags: ReportFlags) => {
      const { writeReport } = await import('../inspect/report.js');
      const written = await writeReport({
        outDir: flags.out,
        ...(ref === undefined ? {} : { evalId: ref }),
        ...(flags.output === undefined ? {} : { output: flags.output }),
        ...(flags.details === undefined ? {} : { limits: { maxDetailRuns: flags.details } }),
      });
      process.stdout.write(`${written.file}\n`);
    });
}
