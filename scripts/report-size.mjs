// `npm run report-size`: an eval of 10,000 quick rollouts (a third of them failing, a third with
// hostile output), then its HTML report: how long writing the report takes and how large it is.
// ROLLOUTS=2000 npm run report-size for a shorter run; KEEP=1 keeps the folder (to open the page).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runEval, writeReport } from '../dist/src/index.js';

const total = Number(process.env.ROLLOUTS ?? 10_000);
const out = mkdtempSync(join(tmpdir(), 'silo-report-size-'));
const started = Date.now();
const summary = await runEval({
  paths: ['fixtures/eval/quick.tasks.mjs'],
  agent: 'fixtures/agents/report-mix.mjs',
  trials: Math.ceil(total / 3),
  concurrency: 16,
  reuseWorkers: true,
  outDir: out,
  onProgress: (p) => {
    if (p.done % 1000 === 0 && p.done > 0) process.stderr.write(`${p.done}/${p.total} runs · ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
  },
});
const evalSeconds = (Date.now() - started) / 1000;

const mib = (bytes) => Number((bytes / 2 ** 20).toFixed(2));
const reports = [];
for (const [name, limits] of [['default', {}], ['rows only (--details 0)', { maxDetailRuns: 0 }]]) {
  const written = await writeReport({ outDir: out, evalId: summary.evalId, limits, output: join(out, `report-${reports.length}.html`) });
  reports.push({ name, ms: Math.round(written.durationMs), bytes: written.bytes, mib: mib(written.bytes), runs: written.runs, detailed: written.detailed });
}
const [full, rows] = reports;
console.log(
  JSON.stringify(
    {
      rollouts: summary.totals.runs,
      passed: summary.totals.passed,
      failed: summary.totals.failed,
      evalSeconds,
      reports,
      // Both include the page's fixed part (CSS, script, charts: tens of KB).
      bytesPerRunRowsOnly: Math.round(rows.bytes / rows.runs),
      detailBytesPerDetailedRun: full.detailed === 0 ? null : Math.round((full.bytes - rows.bytes) / full.detailed),
      kept: process.env.KEEP ? out : undefined,
    },
    null,
    2,
  ),
);
if (!process.env.KEEP) rmSync(out, { recursive: true, force: true });
