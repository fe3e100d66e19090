// `npm run bench:queue`: the queue path (`silo eval --queue` + `silo worker`) against a local eval,
// on this machine, with a private redis-server on 127.0.0.1 (a free port, no persistence).
//   overhead   N trivial rollouts, one at a time: a local eval (concurrency 1) vs a coordinator and
//              one worker process (concurrency 1), and the same with a single rollout. The
//              single-rollout difference is the queue's fixed cost per eval (connecting, the workers
//              noticing the eval, the last collection, waiting for the workers to leave); the
//              rest, divided by N − 1, is its cost per rollout (Redis round trips, artifacts
//              through Redis and back to disk)
//   scaling    N CPU-heavy rollouts (fixtures/agents/bench-cpu.mjs) on 1, 2 and 4 worker processes
//              of concurrency 1: wall time and speed-up over one worker. It cannot exceed the
//              number of free cores of this machine.
//   spread     N rollouts whose agent waits 1 s (fixtures/agents/bench-waiter.mjs, a model's
//              latency) on 1, 2 and 4 worker processes of concurrency 1: shows that the queue
//              spreads the work when this machine's CPU is not the bottleneck.
// Each measurement is repeated --rounds times (default 3), local and queue interleaved, and the
// median is reported: on a shared machine single runs swing by tens of percent.
// Options: --rollouts N (overhead, default 200), --cpu-rollouts N (scaling, default 16),
// --wait-rollouts N (spread, default 8), --rounds N, --json.
// Benchmarks print numbers; tests never assert timings.
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { availableParallelism, cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { runEval } from '../dist/src/index.js';
import { queueRunner } from '../dist/src/queue/coordinator.js';

const arg = (name, fallback) => {
  const i = process.argv.indexOf(name);
  return i === -1 ? fallback : Number(process.argv[i + 1]);
};
const json = process.argv.includes('--json');
const ROLLOUTS = arg('--rollouts', 200);
const CPU_ROLLOUTS = arg('--cpu-rollouts', 16);
const ROUNDS = arg('--rounds', 3);
const WAIT_ROLLOUTS = arg('--wait-rollouts', 8);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const TASKS = 'fixtures/bench/tasks.mjs';
/** What `silo` runs once installed (package.json's `bin`). */
const BIN = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).bin.silo;
const log = (text) => {
  if (!json) process.stderr.write(`${text}\n`);
};
const round = (x, digits = 2) => Number(x.toFixed(digits));

if (spawnSync('redis-server', ['--version']).error) {
  process.stderr.write('bench-queue: redis-server is not installed (apt-get install redis-server)\n');
  process.exit(2);
}
const work = mkdtempSync(join(tmpdir(), 'silo-bench-queue-'));
const port = await new Promise((resolve) => {
  const server = createServer().listen(0, '127.0.0.1', () => {
    const { port } = server.address();
    server.close(() => resolve(port));
  });
});
const redis = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', work], { stdio: 'ignore' });
const url = `redis://127.0.0.1:${port}`;

/** Every worker process started, so that none outlives the benchmark. */
const started = new Set();

/** `count` worker processes; resolves once each is waiting for jobs. */
async function startWorkers(count) {
  const workers = Array.from({ length: count }, () => {
    const w = spawn(process.execPath, [BIN, 'worker', '--queue', url, '--concurrency', '1', '--out', join(work, 'kept')], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, TMPDIR: work },
    });
    started.add(w);
    w.once('exit', () => started.delete(w));
    return w;
  });
  await Promise.all(
    workers.map(
      (w) =>
        new Promise((resolve, reject) => {
          let text = '';
          w.stderr.on('data', (c) => {
            text += c;
            if (text.includes('waiting for jobs')) resolve();
          });
          w.once('exit', (code) => reject(new Error(`a worker exited (${code}): ${text}`)));
        }),
    ),
  );
  return {
    async stop() {
      await Promise.all(workers.map((w) => new Promise((resolve) => (w.exitCode !== null ? resolve() : (w.once('exit', resolve), w.kill('SIGINT'))))));
    },
  };
}

/** Wall ms of one eval. */
async function timed(options) {
  const t = performance.now();
  const summary = await runEval({ paths: [TASKS], outDir: join(work, 'out'), ...options });
  const ms = performance.now() - t;
  if (summary.totals.passed !== summary.totals.runs) throw new Error(`bench eval did not pass: ${JSON.stringify(summary.totals)}`);
  return ms;
}

const results = { machine: { cpus: cpus().length, availableParallelism: availableParallelism(), loadavg: loadavg().map((x) => round(x)) } };
try {
  for (let i = 0; i < 50 && (await fetchPing()) === false; i++) await new Promise((r) => setTimeout(r, 50));

  log(`overhead: ${ROLLOUTS} trivial rollouts, one at a time`);
  const trivial = { agent: 'fixtures/agents/bench-caller.mjs', task: ['bench/calls-0'], trials: ROLLOUTS };
  const one = await startWorkers(1);
  await timed({ ...trivial, trials: 10, concurrency: 1 }); // warm-up
  await timed({ ...trivial, trials: 10, runner: queueRunner({ url }) });
  const locals = [];
  const queued = [];
  const localOnes = [];
  const queuedOnes = [];
  for (let r = 0; r < ROUNDS; r++) {
    localOnes.push(await timed({ ...trivial, trials: 1, concurrency: 1 }));
    queuedOnes.push(await timed({ ...trivial, trials: 1, runner: queueRunner({ url }) }));
    locals.push(await timed({ ...trivial, concurrency: 1 }));
    queued.push(await timed({ ...trivial, runner: queueRunner({ url }) }));
    log(`  round ${r + 1}: local ${round(locals.at(-1) / ROLLOUTS)} ms/rollout, queue ${round(queued.at(-1) / ROLLOUTS)} ms/rollout`);
  }
  await one.stop();
  const localMs = median(locals);
  const queueMs = median(queued);
  const fixedMs = median(queuedOnes) - median(localOnes);
  results.overhead = {
    rollouts: ROLLOUTS,
    rounds: ROUNDS,
    localMsPerRollout: round(localMs / ROLLOUTS),
    queueMsPerRollout: round(queueMs / ROLLOUTS),
    fixedMsPerEval: Math.round(fixedMs),
    overheadMsPerRollout: round((queueMs - localMs - fixedMs) / (ROLLOUTS - 1)),
  };
  const o = results.overhead;
  log(`  median: local ${o.localMsPerRollout} ms/rollout, queue ${o.queueMsPerRollout} ms/rollout; the queue's fixed cost ${o.fixedMsPerEval} ms per eval, then ${o.overheadMsPerRollout} ms per rollout`);

  log(`scaling: ${CPU_ROLLOUTS} CPU-heavy rollouts (fixtures/agents/bench-cpu.mjs)`);
  const heavy = { agent: 'fixtures/agents/bench-cpu.mjs', task: ['bench/calls-0'], trials: CPU_ROLLOUTS };
  const fleets = [1, 2, 4];
  const walls = new Map(fleets.map((count) => [count, []]));
  const localHeavy = [];
  for (let r = 0; r < ROUNDS; r++) {
    localHeavy.push(await timed({ ...heavy, concurrency: 1 }));
    for (const count of fleets) {
      const fleet = await startWorkers(count);
      walls.get(count).push(await timed({ ...heavy, runner: queueRunner({ url }) }));
      await fleet.stop();
    }
    log(`  round ${r + 1}: local serial ${round(localHeavy.at(-1) / 1000)} s; ${fleets.map((c) => `${c} worker(s) ${round(walls.get(c).at(-1) / 1000)} s`).join(', ')}`);
  }
  results.scaling = { rollouts: CPU_ROLLOUTS, rounds: ROUNDS, localSerialMs: Math.round(median(localHeavy)), workers: [] };
  const base = median(walls.get(1));
  for (const count of fleets) {
    const ms = median(walls.get(count));
    results.scaling.workers.push({ workers: count, wallMs: Math.round(ms), speedUp: round(base / ms) });
    log(`  median, ${count} worker${count > 1 ? 's' : ' '}: ${round(ms / 1000)} s, speed-up ×${round(base / ms)}`);
  }
  log(`spread: ${WAIT_ROLLOUTS} rollouts that wait 1 s (fixtures/agents/bench-waiter.mjs)`);
  const waiting = { agent: 'fixtures/agents/bench-waiter.mjs', task: ['bench/wait'], trials: WAIT_ROLLOUTS };
  results.spread = { rollouts: WAIT_ROLLOUTS, workers: [] };
  for (const count of fleets) {
    const fleet = await startWorkers(count);
    const ms = await timed({ ...waiting, runner: queueRunner({ url }) });
    await fleet.stop();
    results.spread.workers.push({ workers: count, wallMs: Math.round(ms), idealMs: Math.ceil(WAIT_ROLLOUTS / count) * 1000 });
    log(`  ${count} worker${count > 1 ? 's' : ' '}: ${round(ms / 1000)} s (the waits alone: ${Math.ceil(WAIT_ROLLOUTS / count)} s)`);
  }
  results.machine.loadavgAfter = loadavg().map((x) => round(x));
  log(`machine: ${results.machine.cpus} cpus, load average ${results.machine.loadavg.join(' ')} before, ${results.machine.loadavgAfter.join(' ')} after (shared: other work skews these)`);
  if (json) process.stdout.write(`${JSON.stringify(results, null, 2)}\n`);
} finally {
  for (const w of started) w.kill('SIGKILL');
  redis.kill('SIGTERM');
  await new Promise((resolve) => (redis.exitCode !== null ? resolve() : redis.once('exit', resolve)));
  rmSync(work, { recursive: true, force: true });
}

/** Whether the server answers yet (a bare PING over TCP). */
async function fetchPing() {
  const { connect } = await import('node:net');
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.end('PING\r\n');
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
