// `npm run bench:regrade` (`-- --json` for machines, `-- --task 'retail/dev/*'` for a sample):
// grading the retail oracle's runs again against running them. An eval of the retail tasks with
// the oracle agent, as a user runs it (sandbox process, concurrency 16), then `regrade` of that
// eval with the verifiers unchanged (default concurrency 1, and 4 at once): wall time per run of
// each, and their ratio. The regrade must change and refuse nothing. Both load the task file once.
// Benchmarks print numbers; tests never assert timings.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { regrade, runEval } from '../dist/src/index.js';

const args = process.argv.slice(2);
const json = args.includes('--json');
const task = args.flatMap((a, i) => (a === '--task' && args[i + 1] ? [args[i + 1]] : []));
const concurrency = Number(args[args.indexOf('--concurrency') + 1]) || 16;
const out = mkdtempSync(join(process.env.OUT ?? tmpdir(), 'silo-bench-regrade-'));
const log = (text) => {
  if (!json) process.stderr.write(`${text}\n`);
};

log(`eval of ${task.length ? task.join(', ') : 'every retail task'} with the oracle, concurrency ${concurrency} …`);
let t = performance.now();
const summary = await runEval({ paths: ['fixtures/retail/tasks.ts'], agent: 'fixtures/retail/gold/oracle.ts', task, concurrency, outDir: out });
const evalMs = performance.now() - t;
if (summary.totals.passed !== summary.totals.runs) throw new Error(`the oracle should pass every task: ${JSON.stringify(summary.totals)}`);

const regrades = [];
for (const c of [undefined, 4]) {
  log(`regrade${c ? `, concurrency ${c}` : ''} …`);
  t = performance.now();
  const report = await regrade({ target: summary.evalId, outDir: out, ...(c ? { concurrency: c } : {}) });
  const ms = performance.now() - t;
  if (report.runs !== summary.totals.runs || report.changed.length > 0 || report.refused.length > 0) {
    throw new Error(`an unchanged regrade should change nothing: ${JSON.stringify({ ...report, evals: undefined })}`);
  }
  regrades.push({ concurrency: c ?? 'default', msPerRun: ms / report.runs });
}
rmSync(out, { recursive: true, force: true });

const runs = summary.totals.runs;
const result = {
  runs,
  eval: { concurrency, msPerRun: Number((evalMs / runs).toFixed(2)) },
  regrade: regrades.map((r) => ({ concurrency: r.concurrency, msPerRun: Number(r.msPerRun.toFixed(2)), ratio: Number((r.msPerRun / (evalMs / runs)).toFixed(3)) })),
};
if (json) {
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
} else {
  console.log(`retail oracle, ${runs} runs · eval (sandbox, concurrency ${concurrency}) ${result.eval.msPerRun} ms per run`);
  for (const r of result.regrade) console.log(`regrade (concurrency ${r.concurrency}) ${r.msPerRun} ms per run · ratio ${r.ratio} (target ≤ 0.1)`);
}
