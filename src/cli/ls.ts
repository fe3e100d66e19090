/** `silo ls`: recent runs and evals. */
import type { Command } from 'commander';
import { basename, join } from 'node:path';
import type { EvalSummary, ResultRecord, RunRecord } from '../types.js';
import { integer } from './options.js';
import { createStyle } from '../inspect/style.js';
import { ms } from '../time.js';

export function registerLs(program: Command): void {
  program
    .command('ls')
    .description('list recent runs and evals')
    .option('-o, --out <dir>', 'artifact folder to look in', '.silo')
    .option('-n, --limit <n>', 'how many runs, and how many evals, to list', integer(1), 20)
    .option('--json', 'print { runs, evals } as JSON')
    .action(async (flags: { out: string; limit: number; json?: boolean }) => {
      const [{ evalLocked }, { suspicion }, { listEvalIds, listRunIds, readJson, reportedEvalStatus, reportedRun }, { plural }] = await Promise.all([
        import('../eval/lock.js'),
        import('../inspect/diagnose.js'),
        import('../inspect/runs.js'),
        import('../eval/reporters.js'),
      ]);
      const runsDir = join(flags.out, 'runs');
      const ids = listRunIds(runsDir);
      const runs = ids.slice(0, flags.limit).map((id) => {
        const recorded = readJson<RunRecord>(join(runsDir, id, 'run.json'));
        // A run left `running` by a process that is gone is reported crashed.
        const run = recorded && reportedRun(recorded);
        const result = readJson<ResultRecord>(join(runsDir, id, 'result.json'));
        return {
          runId: id,
          taskId: run?.taskId ?? '?',
          status: run?.status ?? '?',
          score: result?.score ?? null,
          termination: run?.termination ?? null,
          startedAt: run?.startedAt ?? null,
          durationMs: run?.durationMs ?? null,
          agent: run?.agent ?? '?',
          suspicious: suspicion(result?.status ?? '', result?.diagnosis ?? []) !== undefined,
        };
      });
      const evalIds = listEvalIds(flags.out);
      const evals = evalIds.slice(0, flags.limit).map((id) => {
        const dir = join(flags.out, 'evals', id);
        const summary = readJson<Partial<EvalSummary>>(join(dir, 'summary.json'));
        // `running` in a summary whose process is gone (its owner is dead, or its lock free): it stopped part-way.
        const status = !summary?.status ? '?' : summary.status === 'running' && !evalLocked(dir) ? 'interrupted' : reportedEvalStatus({ status: summary.status, ...(summary.owner ? { owner: summary.owner } : {}) });
        return {
          evalId: id,
          status,
          agent: summary?.agent ?? '?',
          startedAt: summary?.startedAt ?? null,
          runs: summary?.totals?.runs ?? null,
          passRate: summary?.totals?.passRate ?? null,
          suspicious: summary?.totals?.suspicious ?? 0,
        };
      });
      if (flags.json) {
        process.stdout.write(`${JSON.stringify({ runs, evals }, null, 2)}\n`);
        return;
      }
      const s = createStyle(process.stdout);
      if (runs.length === 0 && evals.length === 0) {
        process.stdout.write(`no runs in ${runsDir} yet; start one with \`silo run <task-file> --agent <file>\`\n`);
        return;
      }
      process.stdout.write(`${s.bold('Runs')} ${s.dim(`(${Math.min(ids.length, flags.limit)} of ${ids.length}, newest first)`)}\n`);
      for (const r of runs) {
        const paint = r.suspicious ? s.yellow : r.status === 'passed' ? s.green : r.status === 'failed' ? s.red : s.yellow;
        const score = r.score === null ? '  -  ' : r.score.toFixed(2);
        const when = r.startedAt ? r.startedAt.replace('T', ' ').slice(0, 19) : '';
        const took = r.durationMs === null ? '' : ms(r.durationMs);
        process.stdout.write(`  ${r.runId}  ${paint(r.status.padEnd(7))} ${score}  ${r.taskId}${r.suspicious ? `  ${s.yellow('⚠ suspicious')}` : ''}  ${s.dim(`${r.termination ?? ''} ${took} ${when}`)}\n`);
      }
      if (evals.length > 0) {
        process.stdout.write(`\n${s.bold('Evals')} ${s.dim(`(${evals.length} of ${evalIds.length}, newest first)`)}\n`);
        const idWidth = Math.max(...evals.map((e) => e.evalId.length));
        for (const e of evals) {
          const paint = e.status === 'completed' ? (e.passRate === 1 ? s.green : e.passRate === 0 ? s.red : (x: string) => x) : s.yellow;
          const rate = e.passRate === null ? '   – ' : `${(100 * e.passRate).toFixed(0).padStart(3)}%`;
          const when = e.startedAt ? e.startedAt.replace('T', ' ').slice(0, 19) : '';
          const warn = e.suspicious ? `  ${s.yellow(`${e.suspicious} suspicious`)}` : '';
          // "1 run", "12 runs": the number right-aligned, the word padded so the agent's column stays put.
          const count = e.runs === null ? '? runs' : plural(e.runs, 'run');
          const digits = count.indexOf(' ');
          const runs = `${' '.repeat(Math.max(0, 5 - digits))}${count.padEnd(digits + 5)}`;
          process.stdout.write(`  ${e.evalId.padEnd(idWidth)}  ${paint(e.status.padEnd(11))} ${rate}  ${runs}  ${basename(e.agent)}${warn}  ${s.dim(when)}\n`);
        }
        if (evalIds.length > evals.length) process.stdout.write(s.dim(`  … ${evalIds.length - evals.length} older (--limit ${evalIds.length})\n`));
      }
    });
}
