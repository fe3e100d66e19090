// `npm run bench`: Silo's overhead as ratios against baselines measured in the same run.
//   per call:    a Silo tool call (agent → host → validate → run → clone → trace → agent)
//                vs a bare MessagePort round trip between a worker and its host;
//   per rollout: a whole Silo rollout of an agent that does nothing
//                vs starting a bare worker thread that runs one function and exits.
// Numbers depend on the machine; the ratios are what to compare between versions.
import { MessageChannel, Worker } from 'node:worker_threads';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadTasks, runRollout } from '../dist/src/index.js';
import { AgentPool } from '../dist/src/pool/pool.js';

const CALLS = 1000;
const ROLLOUTS = Number(process.env.BENCH_ROLLOUTS ?? 40);
const out = mkdtempSync(join(tmpdir(), 'silo-bench-'));

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

/** Bare baseline: N sequential JSON round trips over a MessagePort to a worker. */
async function bareRoundTrip(n) {
  const worker = new Worker(
    `const { parentPort } = require('node:worker_threads');
     parentPort.once('message', ({ port }) => {
       port.on('message', (text) => { const m = JSON.parse(text); port.postMessage({ id: m.id, value: m.n }); });
     });`,
    { eval: true },
  );
  const { port1, port2 } = new MessageChannel();
  worker.postMessage({ port: port2 }, [port2]);
  const roundTrip = (i) =>
    new Promise((resolve) => {
      port1.once('message', resolve);
      port1.postMessage(JSON.stringify({ id: i, name: 'noop', n: i }));
    });
  for (let i = 0; i < 200; i++) await roundTrip(i); // warm up
  const t = performance.now();
  for (let i = 0; i < n; i++) await roundTrip(i);
  const perCall = (performance.now() - t) / n;
  port1.close();
  await worker.terminate();
  return perCall;
}

/** Bare baseline: start a worker thread, run one function, let it exit. */
async function bareWorkerStart() {
  const t = performance.now();
  const worker = new Worker(`require('node:worker_threads').parentPort.postMessage('done')`, { eval: true, env: {} });
  await new Promise((resolve) => worker.once('message', resolve));
  await new Promise((resolve) => worker.once('exit', resolve));
  return performance.now() - t;
}

const tasks = await loadTasks(['fixtures/bench/tasks.mjs']);
const zero = tasks.find((t) => t.task.id === 'bench/calls-0').task;
const thousand = tasks.find((t) => t.task.id === 'bench/calls-1000').task;
const pool = new AgentPool({ maxThreads: 4 });

// Per call.
const bare = median([await bareRoundTrip(CALLS), await bareRoundTrip(CALLS), await bareRoundTrip(CALLS)]);
const callSamples = [];
for (let i = 0; i < 5; i++) {
  const r = await runRollout({ task: thousand, agent: 'fixtures/agents/bench-caller.mjs', outDir: out, pool, seed: 1 });
  if (r.status !== 'passed') throw new Error(`bench rollout failed: ${JSON.stringify(r)}`);
  const { readFileSync } = await import('node:fs');
  const run = JSON.parse(readFileSync(join(r.runDir, 'run.json'), 'utf8'));
  callSamples.push((run.agentTimeMs + run.toolTimeMs) / CALLS);
}
const siloCall = median(callSamples);

// Per rollout.
const bareStarts = [];
for (let i = 0; i < 20; i++) bareStarts.push(await bareWorkerStart());
const bareStart = median(bareStarts);
const rolloutSamples = [];
for (let i = 0; i < ROLLOUTS; i++) {
  const t = performance.now();
  await runRollout({ task: zero, agent: 'fixtures/agents/bench-caller.mjs', outDir: out, pool, seed: 1 });
  rolloutSamples.push(performance.now() - t);
}
const siloRollout = median(rolloutSamples);
const tsSamples = [];
for (let i = 0; i < 10; i++) {
  const t = performance.now();
  await runRollout({ task: zero, agent: 'fixtures/agents/do-nothing.ts', outDir: out, pool, seed: 1 });
  tsSamples.push(performance.now() - t);
}
const tsRollout = median(tsSamples);
await pool.destroy();
rmSync(out, { recursive: true, force: true });

const row = (name, value, base, unit = 'ms') =>
  `${name.padEnd(44)} ${value.toFixed(3).padStart(9)} ${unit}${base ? `   ${(value / base).toFixed(1).padStart(5)}× baseline` : ''}`;
console.log(`Silo bench · node ${process.versions.node} · ${new Date().toISOString()}`);
console.log('');
console.log(row('baseline: bare MessagePort JSON round trip', bare));
console.log(row('Silo tool call (sequential, median of 5×1000)', siloCall, bare));
console.log(row('  overhead per call', siloCall - bare));
console.log('');
console.log(row('baseline: bare worker start + exit', bareStart));
console.log(row(`Silo rollout, JS agent (median of ${ROLLOUTS})`, siloRollout, bareStart));
console.log(row('Silo rollout, TypeScript agent (median of 10)', tsRollout, bareStart));
