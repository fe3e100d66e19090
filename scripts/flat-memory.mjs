// `npm run flat-memory`: a 10,000-rollout eval of a trivial agent, sampling the host's memory, to
// show that an eval's memory stays flat (results stream to disk; only counts are kept).
// ROLLOUTS=2000 npm run flat-memory for a shorter run.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runEval } from '../dist/src/index.js';

const total = Number(process.env.ROLLOUTS ?? 10_000);
const out = mkdtempSync(join(tmpdir(), 'silo-flat-'));
const mb = (bytes) => (bytes / 2 ** 20).toFixed(0);
const samples = [];
let next = 0.1;
const started = Date.now();

const summary = await runEval({
  paths: ['fixtures/bench/tasks.mjs'],
  task: ['bench/calls-0'],
  agent: 'fixtures/agents/bench-caller.mjs',
  trials: total,
  concurrency: 16,
  outDir: out,
  onProgress: (p) => {
    if (p.done < next * p.total) return;
    next += 0.1;
    globalThis.gc?.();
    const { heapUsed, rss } = process.memoryUsage();
    samples.push({ done: p.done, heapMb: mb(heapUsed), rssMb: mb(rss) });
    process.stderr.write(`${p.done}/${p.total} runs · heap ${mb(heapUsed)} MiB · rss ${mb(rss)} MiB · ${((Date.now() - started) / 1000).toFixed(0)} s\n`);
  },
});
rmSync(out, { recursive: true, force: true });
console.log(JSON.stringify({ rollouts: summary.totals.runs, passed: summary.totals.passed, seconds: (Date.now() - started) / 1000, samples }, null, 2));
