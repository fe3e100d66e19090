/** `silo show`: one run, readable. */
import type { Command } from 'commander';
import { SiloError } from '../errors.js';
import { join } from 'node:path';
import { createStyle } from '../inspect/style.js';

export function registerShow(program: Command): void {
  program
    .command('show')
    .description('show a run: header, timeline of calls and results, changes to the world, checks')
    .argument('[run]', 'a runId, a unique prefix or suffix of one, or a run folder (default: the latest run)')
    .option('-o, --out <dir>', 'artifact folder to look in', '.silo')
    .option('--json', 'print { run, result, diagnosis, trace, diff } as JSON')
    .action(async (ref: string | undefined, flags: { out: string; json?: boolean }) => {
      const [{ formatRun }, { listRunIds, loadRun, resolveRunDir }] = await Promise.all([import('../inspect/show.js'), import('../inspect/runs.js')]);
      let dir: string;
      if (ref === undefined) {
        const latest = listRunIds(join(flags.out, 'runs'))[0];
        if (!latest) throw new SiloError('SILO_RUN_NOT_FOUND', `no runs in ${join(flags.out, 'runs')}; start one with \`silo run\``);
        dir = join(flags.out, 'runs', latest);
      } else {
        dir = resolveRunDir(ref, flags.out);
      }
      const loaded = loadRun(dir);
      if (flags.json) {
        const { run, result, trace, diff } = loaded;
        const diagnosis = result?.diagnosis ?? [];
        process.stdout.write(`${JSON.stringify({ dir: loaded.dir, run, result, diagnosis, trace, diff }, null, 2)}\n`);
      } else {
        process.stdout.write(`${formatRun(loaded, createStyle(process.stdout))}\n`);
      }
    });
}
