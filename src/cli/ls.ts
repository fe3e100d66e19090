/** `silo ls`: recent runs and evals. */
import type { Command } from 'commander';
import { join } from 'node:path';
import { listEvalIds, listRunIds, readJson, reportedEvalStatus, reportedRun } from '../inspect/runs.js';
import type { EvalSummary, ResultRecord, RunRecord } from '../types.js';
import { integer } from './options.js';
import { createStyle } from '../inspect/style.js';
import { ms } from '../inspect/show.js';

export function registerLs(program: Command): void {
  program
    .command('ls')
    .description('list recent runs and evals')
    .option('-o, --out <dir>', 'artifact folder to look in', '.silo')
    .option('-n, --limit <n>', 'how many runs to list', integer(1), 20)
    .option('--json', 'print { runs, evals } as JSON')
    .action((flags: { out: string; limit: number; json?: boolean }) => {
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
        };
      });
      const evals = listEvalIds(flags.out).map((id) => {
        const summary = readJson<Pick<EvalSummary, 'status' | 'owner' | 'startedAt'> & { totals?: { runs?: number; passRate?: number } }>(
          join(flags.out, 'evals', id, 'summary.json'),
        );
        return { evalId: id, status: summary?.status ? reportedEvalStatus(summary) : '?', startedAt: summary?.startedAt ?? null, runs: summary?.totals?.runs ?? null };
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
        const paint = r.status === 'passed' ? s.green : r.status === 'failed' ? s.red : s.yellow;
        const score = r.score === null ? '  -  ' : r.score.toFixed(2);
        const when = r.startedAt ? r.startedAt.replace('T', ' ').slice(0, 19) : '';
        const took = r.durationMs === null ? '' : ms(r.durationMs);
        process.stdout.write(`  ${r.runId}  ${paint(r.status.padEnd(7))} ${score}  ${r.taskId}  ${s.dim(`${r.termination ?? ''} ${took} ${when}`)}\n`);
      }
      if (evals.length > 0) {
        process.stdout.write(`\n${s.bold('Evals')}\n`);
        for (const e of evals) process.stdout.write(`  ${e.evalId}  ${e.status}  ${e.runs ?? '?'} runs  ${s.dim(e.startedAt ?? '')}\n`);
      }
    });
}
