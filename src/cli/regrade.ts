/** `silo regrade`: stored runs graded again by today's verifiers, without running the agent. */
import type { Command } from 'commander';
import { tableReport } from '../eval/reporters.js';
import type { RegradeReport } from '../eval/regrade.js';
import { DEFAULT_REGRADE_CONCURRENCY } from '../options.js';
import { ms } from '../time.js';
import { createStyle, type Style } from '../inspect/style.js';
import { collect, integer } from './options.js';

interface RegradeFlags {
  out: string;
  tasks?: string[];
  concurrency: number;
  json?: boolean;
}

export function registerRegrade(program: Command): void {
  program
    .command('regrade')
    .description("grade stored runs again with today's verifiers, without running any agent (after fixing a verifier)")
    .argument('<target>', 'an evalId or runId (or a unique prefix or suffix of one), an eval folder, a run folder, or an --out folder holding one eval')
    .option('-o, --out <dir>', 'artifact folder to look in', '.silo')
    .option('--tasks <path>', 'take the tasks (by id) from these files or folders instead (repeatable): tasks that moved, shards from other checkouts', collect)
    .option('-c, --concurrency <n>', 'runs graded at once (raise it for verifiers that wait, such as a model as judge)', integer(1), DEFAULT_REGRADE_CONCURRENCY)
    .option('--json', 'print { runs, passed, failed, errors, skipped, changed, refused, evals } as JSON')
    .addHelpText(
      'after',
      "\nEach run's task is loaded by id from its task file as it is now (for an eval's runs, the eval's task\n" +
        'files). Its world is rebuilt from the recorded seed and must hash to the recorded worldHash (else\n' +
        "the run is refused: world_changed); the stored state-diff.json gives the final world; today's\n" +
        'verifier and mayChange grade it with the stored output and trace. The old result is kept as\n' +
        'result.<n>.json. An eval gets its runs.jsonl and summary.json recomputed. Runs never graded (not\n' +
        'started, agent not loaded, cancelled) stay as they were. No agent code runs.\n' +
        'Exit codes: 0 every run passes, 1 a run failed or errored or was refused, 2 usage or set-up error.\n' +
        'Example:\n  silo regrade 01JEVALID',
    )
    .action(async (target: string, flags: RegradeFlags) => {
      const progress = process.stderr.isTTY && !flags.json;
      const { regrade, describeRefusal } = await import('../eval/regrade.js');
      const report = await regrade({
        target,
        outDir: flags.out,
        concurrency: flags.concurrency,
        ...(flags.tasks ? { tasks: flags.tasks } : {}),
        ...(progress ? { onProgress: (p: { done: number; total: number }) => process.stderr.write(`\rregrading ${p.done}/${p.total}`) } : {}),
      });
      if (progress) process.stderr.write('\r\u001b[K');
      if (flags.json) {
        const { evals, ...rest } = report;
        const json = { ...rest, evals: evals.map((e) => ({ evalId: e.evalId, totals: e.totals, ...(e.baseline ? { baseline: e.baseline } : {}) })) };
        process.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
      } else {
        process.stdout.write(`${formatRegrade(report, createStyle(process.stdout), describeRefusal)}\n`);
      }
      process.exitCode = regradeExitCode(report);
    });
}

/** What a regrade did, for people: each eval's new table, then the runs whose status changed and those refused. */
export function formatRegrade(r: RegradeReport, s: Style, describeRefusal: (refusal: RegradeReport['refused'][number]) => string): string {
  const out: string[] = [];
  for (const summary of r.evals) out.push(tableReport(summary, s), '');
  const moved = new Map<string, number>();
  for (const c of r.changed) moved.set(`${c.from} → ${c.to}`, (moved.get(`${c.from} → ${c.to}`) ?? 0) + 1);
  const changes = r.changed.length === 0 ? 'no status changed' : `${r.changed.length} changed (${[...moved].map(([k, n]) => `${n} ${k}`).join(', ')})`;
  out.push(
    `regraded ${r.runs} run${r.runs === 1 ? '' : 's'} in ${ms(r.durationMs)}: ${changes}` +
      `${r.refused.length > 0 ? ` · ${s.yellow(`${r.refused.length} refused`)}` : ''}` +
      `${r.skipped > 0 ? ` · ${r.skipped} never graded, left as they were` : ''}`,
  );
  for (const c of r.changed) {
    const paint = c.to === 'passed' ? s.green : c.to === 'failed' ? s.red : s.yellow;
    out.push(`  ${paint(`${c.from} → ${c.to}`)}  ${c.taskId}${c.trial === undefined ? '' : ` trial ${c.trial}`}  ${s.dim(c.runId)}${c.retried ? s.dim(' (retried: not counted)') : ''}`);
  }
  if (r.refused.length > 0) {
    out.push(s.yellow(`refused (their results stay as they were):`));
    for (const refusal of r.refused) out.push(`  ${describeRefusal(refusal)}`);
  }
  return out.join('\n');
}

/** As `silo eval`: 0 when every run counted passes; 1 when one failed, errored or could not be regraded. */
export function regradeExitCode(r: RegradeReport): number {
  if (r.refused.length > 0) return 1;
  if (r.evals.length > 0) return r.evals.every((e) => e.totals.failed === 0 && e.totals.errors === 0 && e.totals.runs > 0) ? 0 : 1;
  return r.runs > 0 && r.failed === 0 && r.errors === 0 && r.skipped === 0 ? 0 : 1;
}
