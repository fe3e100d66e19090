// `npm run bench:reuse`: the two --reuse-workers cases of `npm run bench`, alone and with more
// detail, to profile them (`node --cpu-prof scripts/bench-reuse.mjs seq`).
//   seq    sequential trivial rollouts on AgentPool({ maxThreads: 1, reuse: true }) (threads):
//          median and mean per rollout, and this process's CPU per rollout (every thread)
//   eval   runEval of 256 trials × concurrency 256 of bench/wait with reuseWorkers (the sandbox
//          process by default; ISOLATION=thread for threads): wall, next to the same agents in bare
//          threads (no Silo); this process's CPU per rollout; when the rollouts started, when
//          their workers took them, and when they finished (read back from the runs)
// Arguments: [seq|eval|both] [rollouts for seq, default 300]. OUT=dir puts the artifacts there
// (the file system matters: creating files is most of a rollout's host work on a slow disk).
// KEEP=1 leaves them: on ext4 without a journal, thousands of files just deleted make the next
// run's files slower to create (the allocator skips inodes freed in the last seconds).
// Benchmarks print numbers; tests never assert timings.
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadTasks, runEval, runRollout } from '../dist/src/index.js';
import { AgentPool, agentsPerReusedWorker } from '../dist/src/pool/pool.js';
import { PreparedAgents } from '../dist/src/pool/compile.js';
import { bareThreads } from './lib/bare-concurrency.mjs';

const mode = process.argv[2] ?? 'both';
const rollouts = Number(process.argv[3] ?? 300);
const out = mkdtempSync(join(process.env.OUT ?? tmpdir(), 'silo-bench-reuse-'));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const quantiles = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return [0, 0.5, 0.9, 1].map((q) => Math.round(s[Math.min(s.length - 1, Math.floor(q * s.length))])).join(' / ');
};
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

if (mode === 'seq' || mode === 'both') {
  const [trivial] = (await loadTasks(['fixtures/bench/tasks.mjs'])).filter((t) => t.task.id === 'bench/calls-0');
  const pool = new AgentPool({ maxThreads: 1, reuse: true });
  // As --reuse-workers runs them (and `npm run bench`): an eval prepares its agent once, not per rollout.
  const preparedAgents = new PreparedAgents();
  const run = () => runRollout({ task: trivial.task, agent: 'fixtures/agents/bench-caller.mjs', outDir: out, pool, seed: 1, preparedAgents });
  for (let i = 0; i < 10; i++) await run();
  const samples = [];
  const c0 = cpuMs();
  const t0 = performance.now();
  for (let i = 0; i < rollouts; i++) {
    const t = performance.now();
    await run();
    samples.push(performance.now() - t);
  }
  const wall = performance.now() - t0;
  console.log(
    `seq    ${rollouts} rollouts · median ${median(samples).toFixed(2)} ms · mean ${(wall / rollouts).toFixed(2)} ms · CPU ${((cpuMs() - c0) / rollouts).toFixed(2)} ms per rollout (all threads)`,
  );
  await pool.destroy();
}

if (mode === 'eval' || mode === 'both') {
  const evalOut = join(out, 'eval');
  const startedAt = Date.now();
  const c0 = cpuMs();
  const t0 = performance.now();
  const summary = await runEval({
    paths: ['fixtures/bench/tasks.mjs'],
    task: ['bench/wait'],
    agent: 'fixtures/agents/bench-waiter.mjs',
    trials: 256,
    concurrency: 256,
    outDir: evalOut,
    reuseWorkers: true,
    isolation: process.env.ISOLATION ?? 'process',
  });
  const wall = performance.now() - t0;
  const cpu = cpuMs() - c0;
  if (summary.totals.passed !== 256) throw new Error(`passed ${summary.totals.passed} of 256`);
  // Each run's start, and its agent's start (the worker took it), in ms since runEval was called.
  const starts = [];
  const agentStarts = [];
  const ends = [];
  for (const id of readdirSync(join(evalOut, 'runs'))) {
    const run = JSON.parse(readFileSync(join(evalOut, 'runs', id, 'run.json'), 'utf8'));
    const events = readFileSync(join(evalOut, 'runs', id, 'trace.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    const returned = events.find((e) => e.type === 'agent_returned');
    const start = Date.parse(run.startedAt) - startedAt;
    starts.push(start);
    ends.push(Date.parse(run.finishedAt) - startedAt);
    agentStarts.push(start + returned.t - run.agentTimeMs);
  }
  const bare = await bareThreads(256, Math.ceil(256 / agentsPerReusedWorker(256)));
  console.log(`eval   256 rollouts · wall ${wall.toFixed(0)} ms (ideal 1000; the same agents in bare threads, a fresh module instance each: ${bare.toFixed(0)} ms) · this process's CPU ${(cpu / 256).toFixed(2)} ms per rollout`);
  console.log(`       rollouts started at ${quantiles(starts)} ms · their agents at ${quantiles(agentStarts)} ms · finished at ${quantiles(ends)} ms (min / p50 / p90 / max)`);
}
if (!process.env.KEEP) rmSync(out, { recursive: true, force: true });
