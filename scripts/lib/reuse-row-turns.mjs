// The whole-process --reuse-workers row of `npm run bench` for two builds at once, to tell whether
// a change moved it: `node scripts/lib/reuse-row-turns.mjs <checkout A> <checkout B> [turns]`
// (each a checkout built with `npm run build`, this one too; default 12 turns). Each turn runs A's
// `silo eval`, B's and the bare process (scripts/lib/bare-concurrency.mjs, with as many threads as
// the bench gives it), in an order that rotates from turn to turn, and prints the medians of
// A/bare, B/bare and A/B over the turns.
//
// Each build's evals write into one folder of its own, kept until the end, as `npm run bench`
// does. Removing a run's folder within the timed command (farm-bench with `rm -rf` in the command)
// makes the next commands' files slow to create on ext4 for minutes, and read thread changes 2–4%
// better than they were here.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { agentsPerReusedWorker } from '../../dist/src/pool/pool.js';

const [a, b, turnsArg] = process.argv.slice(2);
if (!a || !b) {
  process.stderr.write('usage: node scripts/lib/reuse-row-turns.mjs <checkout A> <checkout B> [turns]\n');
  process.exit(2);
}
const turns = Number(turnsArg ?? 12);
if (!Number.isInteger(turns) || turns < 1) {
  process.stderr.write(`turns must be a whole number of 1 or more, not '${turnsArg}'\n`);
  process.exit(2);
}
const root = fileURLToPath(new URL('../..', import.meta.url));
const BARE = join(root, 'scripts/lib/bare-concurrency.mjs');
const ROLLOUTS = 256;
// The bare process runs as many threads as Silo's reused workers would (4 on 2 cores), as the bench does.
const THREADS = Math.ceil(ROLLOUTS / agentsPerReusedWorker(ROLLOUTS));

/** Wall milliseconds of `node <args>`. */
function wall(args) {
  const t = performance.now();
  execFileSync(process.execPath, args, { stdio: 'ignore' });
  return performance.now() - t;
}

const outs = [];
/** One whole `silo eval --reuse-workers` of the checkout at `dir`, into a folder kept until the end. */
function silo(dir) {
  const out = mkdtempSync(join(tmpdir(), 'silo-row-'));
  outs.push(out);
  const bin = join(resolve(dir), 'dist/bundle/bin.js');
  // The bench's command: its report too (as JSON, into the folder).
  const args = [bin, 'eval', join(root, 'fixtures/bench/tasks.mjs'), '-t', 'bench/wait', '-a', join(root, 'fixtures/agents/bench-waiter.mjs'), '-k', String(ROLLOUTS), '-c', String(ROLLOUTS), '--reuse-workers', '--out', out, '-r', 'json', '--output', join(out, 'cli-report.json')];
  return () => wall(args);
}

const commands = { A: silo(a), B: silo(b), bare: () => wall([BARE, 'threads', String(ROLLOUTS), String(THREADS)]) };
const orders = [
  ['A', 'B', 'bare'],
  ['B', 'bare', 'A'],
  ['bare', 'A', 'B'],
  ['B', 'A', 'bare'],
  ['A', 'bare', 'B'],
  ['bare', 'B', 'A'],
];
const ratios = { aToBare: [], bToBare: [], aToB: [] };
try {
  for (let i = 0; i < turns; i++) {
    const ms = {};
    for (const name of orders[i % orders.length]) ms[name] = commands[name]();
    ratios.aToBare.push(ms.A / ms.bare);
    ratios.bToBare.push(ms.B / ms.bare);
    ratios.aToB.push(ms.A / ms.B);
    process.stderr.write(`turn ${i + 1}/${turns}: A ${Math.round(ms.A)} ms · B ${Math.round(ms.B)} ms · bare ${Math.round(ms.bare)} ms\n`);
  }
} finally {
  for (const out of outs) rmSync(out, { recursive: true, force: true });
}
const median = (xs) => [...xs].sort((x, y) => x - y)[Math.floor(xs.length / 2)].toFixed(3);
console.log(`A/bare ${median(ratios.aToBare)} · B/bare ${median(ratios.bToBare)} · A/B ${median(ratios.aToB)} (medians of ${turns} turns)`);
console.log(`A/B each turn: ${ratios.aToB.map((x) => x.toFixed(3)).join(' ')}`);
