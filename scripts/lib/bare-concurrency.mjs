// Baselines for the concurrency benchmarks: the same 256 agents (fixtures/agents/bench-waiter.mjs,
// five 200 ms waits) run with nothing of Silo's, measured in the same run as Silo's numbers.
//   bareWorkers   a Worker per agent (what Silo's default isolation does, minus Silo)
//   bareThreads   a few threads, each importing a fresh instance of the agent module per agent
//                 (what --reuse-workers does, minus Silo)
import { Worker } from 'node:worker_threads';
import { performance } from 'node:perf_hooks';

const AGENT = new URL('../../fixtures/agents/bench-waiter.mjs', import.meta.url).href;

// One worker: imports `count` fresh instances of the agent, runs them all at once, and posts
// 'done' when every one has returned.
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
(async () => {
  const runs = [];
  for (let i = 0; i < workerData.count; i++) {
    const { default: agent } = await import(workerData.agent + '?instance=' + i);
    runs.push(agent());
  }
  await Promise.all(runs);
  parentPort.postMessage('done');
})();
`;

/** Milliseconds until `agents` agents, spread over `threads` threads, have all returned. */
async function run(agents, threads) {
  const t0 = performance.now();
  const per = Math.ceil(agents / threads);
  await Promise.all(
    Array.from({ length: threads }, (_, i) => {
      const count = Math.min(per, agents - i * per);
      const worker = new Worker(WORKER, { eval: true, workerData: { agent: AGENT, count } });
      return new Promise((resolve, reject) => {
        worker.once('message', () => worker.terminate().then(resolve));
        worker.once('error', reject);
      });
    }),
  );
  return performance.now() - t0;
}

/** A Worker per agent. */
export const bareWorkers = (agents) => run(agents, agents);

/** `threads` threads, a fresh module instance per agent. */
export const bareThreads = (agents, threads) => run(agents, threads);

// Run as a script (`node scripts/lib/bare-concurrency.mjs threads|child-threads AGENTS THREADS`, or `workers AGENTS`),
// a whole process that does only this: the baseline of a whole `silo eval` command. `child-threads`
// runs `threads` in a child process with an empty environment, as Silo's sandbox runs its threads:
// the least that putting the agents in a process of their own costs, before any work of Silo's.
if (process.argv[1] && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  const [how, agents, threads] = process.argv.slice(2);
  const whole = (text) => /^[1-9][0-9]*$/.test(text ?? '');
  if (!['threads', 'workers', 'child-threads'].includes(how) || !whole(agents) || (how !== 'workers' && !whole(threads))) {
    process.stderr.write('usage: node scripts/lib/bare-concurrency.mjs threads|child-threads AGENTS THREADS, or workers AGENTS\n');
    process.exit(2);
  }
  if (how === 'child-threads') {
    const { spawn } = await import('node:child_process');
    const child = spawn(process.execPath, [process.argv[1], 'threads', agents, threads], { env: {}, stdio: ['ignore', 'ignore', 'inherit'] });
    process.exitCode = await new Promise((resolve) => child.on('exit', (code) => resolve(code ?? 1)));
  } else {
    await (how === 'workers' ? bareWorkers(Number(agents)) : bareThreads(Number(agents), Number(threads)));
  }
}
