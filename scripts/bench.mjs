// `npm run bench` (`npm run bench -- --json` for machines): Silo against baselines measured in
// the same run, so the ratios mean the same on any machine.
//   toolCall      pinned to one CPU (`taskset -c 0`, in a child process of its own, where taskset
//                 exists): a bare worker→host MessagePort JSON round trip vs Silo's callTool in
//                 threads; and through the sandbox process (the default isolation) vs the same hops
//                 without Silo (a worker in a child process, relayed by its main thread over a
//                 socket) (scripts/lib/bench-toolcall.mjs, which also runs alone)
//   userMessage   a message to a scripted user who answers at once (user.send over the rollout's
//                 port, the user's turn and the two user_message events) vs a tool call, both
//                 unpinned and timed alike
//   rollout       a bare Worker start+exit vs a whole Silo rollout of a trivial agent (and reuse mode,
//                 on the disk and, where /dev/shm is a tmpfs, with the artifacts in memory)
//   sandbox       each level of the sandbox process (bubblewrap's jail, namespaces only, a plain
//                 process) against a bare Node process start: a new sandbox's first rollout, rollouts
//                 in a running one, a tool call; the jail's cost is its numbers minus unshare's
//                 (scripts/lib/bench-sandbox.mjs, which also runs alone)
//   concurrency   256 rollouts whose agents wait 5 × 200 ms (a model's latency): ideal vs measured
//                 wall; and the same agents without Silo, a Worker each and in reused threads;
//                 five turns of each, the ratios the medians of the turns' pairs; then the
//                 --reuse-workers case as whole processes (`silo eval` against a process running
//                 the bare threads, and against one running them in a child process, the process
//                 boundary's own cost), five turns
//   gateway       the model gateway against a scripted upstream called directly: ms added per
//                 non-streamed request and per streamed chunk; then 256 rollouts whose agents stream
//                 5 × ~200 ms from the upstream through one gateway at once (against the
//                 concurrency case's agents that only wait), with the peak memory of both
//   worldScaling  worlds of ~10 KB, 1 MB, 10 MB where the agent changes two records: one
//                 structuredClone of the world vs Silo's own host work per rollout (all but the
//                 user's createState and verify); and the host cost of one tool call with its
//                 change records on each world (it should not grow with the world)
//   cli           `silo --version` against `node -e 0`
//   coldRun       a whole `silo run` of one trivial task against the bare path (a child process whose
//                 worker imports the agent), and where its time goes (scripts/lib/bench-cold.mjs,
//                 which also runs alone)
// The artifacts go to a new folder under the system's temporary folder, or under OUT=dir. Creating
// files is a good part of a short rollout's host work, and its cost varies a lot between file
// systems (and, on some, with how many files were deleted in the last minutes): the bench measures
// it first and again before the concurrency rows, and prints both, so the reuse-mode and
// concurrency numbers can be read against it. Nothing is removed until the end (see fileCreationUs).
// Benchmarks print numbers; tests never assert timings.
import { execFile, spawnSync } from 'node:child_process';
import { Worker } from 'node:worker_threads';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { loadTasks, runEval, runRollout } from '../dist/src/index.js';
import { AgentPool, agentsPerReusedWorker } from '../dist/src/pool/pool.js';
import { bareThreads, bareWorkers } from './lib/bare-concurrency.mjs';
import { benchUpstream, gatewayLatency, gatewayMemory } from './lib/bench-gateway.mjs';
import { Gateway } from '../dist/src/gateway/gateway.js';
import { SandboxPool } from '../dist/src/sandbox/pool.js';
import { benchSandboxLevels, describeSandboxLevels } from './lib/bench-sandbox.mjs';
import { benchCold, describeCold } from './lib/bench-cold.mjs';
import { allowedCpus, bareThread, benchToolCall, describeToolCall } from './lib/bench-toolcall.mjs';
import { PreparedAgents } from '../dist/src/pool/compile.js';
import { buildWorld, createContext, hashWorld } from '../dist/src/rollout/state.js';
import { bindTools } from '../dist/src/rollout/tools.js';

const json = process.argv.includes('--json');
const out = mkdtempSync(join(process.env.OUT ?? tmpdir(), 'silo-bench-'));
const log = (text) => {
  if (!json) process.stderr.write(`${text}\n`);
};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/**
 * CPU time the whole machine has been busy since it booted (every core: user, nice, system, irq,
 * softirq and steal; /proc/stat counts in hundredths of a second), ms; null without /proc/stat.
 */
function busyCpuMs() {
  try {
    const [, user, nice, system, , , irq, softirq, steal] = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/).map(Number);
    const busy = user + nice + system + irq + softirq + (steal ?? 0);
    return Number.isFinite(busy) ? busy * 10 : null;
  } catch {
    return null;
  }
}
const round = (x, digits = 3) => Number(x.toFixed(digits));

/**
 * The toolCall numbers (bench-toolcall.mjs), pinned to one CPU: in a child process started with
 * `taskset -c 0` (its sandbox and workers inherit the pinning), or here, unpinned, without taskset.
 */
async function pinnedToolCall() {
  const script = fileURLToPath(new URL('./lib/bench-toolcall.mjs', import.meta.url));
  if (spawnSync('taskset', ['-c', '0', 'true']).status !== 0) {
    const cpus = allowedCpus();
    return { cpus, pinned: false, ...(await benchToolCall({ out })) };
  }
  return await new Promise((resolve, reject) =>
    execFile('taskset', ['-c', '0', process.execPath, script, '--json', '--out', out], { maxBuffer: 2 ** 24 }, (err, stdout, stderr) =>
      err ? reject(new Error(`the pinned toolCall bench failed: ${stderr || err.message}`)) : resolve(JSON.parse(stdout)),
    ),
  );
}

/** Start a worker thread that posts once and exits; ms. */
async function bareWorkerStart() {
  const t = performance.now();
  const worker = new Worker(`require('node:worker_threads').parentPort.postMessage('done')`, { eval: true, env: {} });
  // Both listeners before either event: the exit can follow the message within one turn.
  const message = new Promise((resolve) => worker.once('message', resolve));
  const exit = new Promise((resolve) => worker.once('exit', resolve));
  await message;
  await exit;
  return performance.now() - t;
}

/** Resident memory of this process and all its descendants, bytes (Linux /proc). */
function treeRss() {
  const parent = new Map();
  const rss = new Map();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      parent.set(Number(entry), Number(fields[1]));
      rss.set(Number(entry), Number(fields[21]) * 4096);
    } catch {
      // gone meanwhile
    }
  }
  let total = 0;
  for (const [pid, bytes] of rss) {
    for (let p = pid; p > 1; p = parent.get(p) ?? 0) {
      if (p === process.pid) {
        total += bytes;
        break;
      }
    }
  }
  return total;
}

/**
 * What the file system charges for a run folder's first file: mkdir, write, rename; µs each. The
 * folders stay until the bench ends, like every file it writes: on ext4 without a journal, each new
 * file is placed only after skipping every inode of its group freed in the last one to five minutes,
 * so files removed mid-bench would make the files of the rows after them slower to create (seen
 * here: ~1 ms a file, against ~0.1 ms once five minutes had passed without removals).
 */
function fileCreationUs(n) {
  const dir = mkdtempSync(join(out, 'fs-'));
  const t = performance.now();
  for (let i = 0; i < n; i++) {
    const folder = join(dir, String(i));
    mkdirSync(folder);
    writeFileSync(join(folder, 'run.json.tmp'), '{"status":"running"}\n');
    renameSync(join(folder, 'run.json.tmp'), join(folder, 'run.json'));
  }
  return ((performance.now() - t) / n) * 1000;
}
const fsUs = fileCreationUs(200);

/** A fresh folder in /dev/shm when that is a tmpfs (files in memory), else null. */
function memoryFolder() {
  try {
    return statfsSync('/dev/shm').type === TMPFS_MAGIC ? mkdtempSync('/dev/shm/silo-bench-') : null;
  } catch {
    return null;
  }
}
const TMPFS_MAGIC = 0x01021994;
/**
 * A folder with a file costs 50–300 µs on this VM's disk as a rule, ~1 ms or more in the minutes
 * after many files were removed: past this, the rows that create many run folders (reuse mode, the
 * 256 at once) measure the file system more than Silo, and the bench says so.
 */
const SLOW_FILES_US = 500;

// cli and coldRun: first, before this process has started anything that would share the CPU.
log('cold command and cold run …');
const cold = await benchCold({ out });

const byId = async (file) => new Map((await loadTasks([file])).map((t) => [t.task.id, t.task]));
const bench = await byId('fixtures/bench/tasks.mjs');

// toolCall, pinned to one CPU (in a child process of its own, so the rest of the bench is not).
log('toolCall (pinned to one CPU) …');
const toolCall = await pinnedToolCall();
// The user channel: a message to a scripted user who answers at once, against a tool call and the
// bare round trip timed the same way here (unpinned).
log('userMessage …');
const CALLS = 1000;
const bareRttUs = median([await bareThread(), await bareThread(), await bareThread()]);
const pool = new AgentPool({ maxThreads: 4 });
// The same through the sandbox process (the default isolation): every message crosses IPC too.
const sandbox = new SandboxPool({ maxThreads: 4 });
const perCall = async (runner) => {
  const samples = [];
  for (let i = 0; i < 5; i++) {
    // Past 500 calls (maxToolCalls) the agent's calls are refused; a grace period long enough for
    // it to make them all and return, even on a loaded machine.
    const r = await runRollout({ task: bench.get('bench/calls-1000'), agent: 'fixtures/agents/bench-caller.mjs', outDir: out, pool: runner, seed: 1, limits: { graceMs: 30_000 } });
    if (r.status !== 'passed') throw new Error(`bench rollout failed: ${JSON.stringify(r)}`);
    const run = JSON.parse(readFileSync(join(r.runDir, 'run.json'), 'utf8'));
    samples.push(((run.agentTimeMs + run.toolTimeMs) / CALLS) * 1000);
  }
  return samples;
};
const callSamples = await perCall(pool);
const sandboxCallUs = median(await perCall(sandbox));
const siloUs = median(callSamples);
const perMessage = async (runner) => {
  const samples = [];
  for (let i = 0; i < 5; i++) {
    const r = await runRollout({ task: bench.get('bench/talk-1000'), agent: 'fixtures/agents/bench-talker.mjs', outDir: out, pool: runner, seed: 1 });
    if (r.status !== 'passed') throw new Error(`bench conversation failed: ${JSON.stringify(r)}`);
    const run = JSON.parse(readFileSync(join(r.runDir, 'run.json'), 'utf8'));
    samples.push((run.phases.agentMs / MESSAGES) * 1000);
  }
  return median(samples);
};
const MESSAGES = 1000;
const messageUs = await perMessage(pool);
const sandboxMessageUs = await perMessage(sandbox);
log(`  a message to the user ${round(messageUs, 1)} µs (a tool call ${round(siloUs, 1)} µs, the bare round trip ${round(bareRttUs, 1)} µs); through the sandbox ${round(sandboxMessageUs, 1)} µs (a tool call ${round(sandboxCallUs, 1)} µs)`);

// rollout
log('rollout …');
const starts = [];
for (let i = 0; i < 20; i++) starts.push(await bareWorkerStart());
const bareWorkerMs = median(starts);
const trivial = bench.get('bench/calls-0');
const timeRollouts = async (n, usePool, extra = {}) => {
  const samples = [];
  for (let i = 0; i < n; i++) {
    const t = performance.now();
    await runRollout({ task: trivial, agent: 'fixtures/agents/bench-caller.mjs', outDir: out, pool: usePool, seed: 1, ...extra });
    samples.push(performance.now() - t);
  }
  return median(samples);
};
const isolatedMs = await timeRollouts(40, pool);
// The same granted a provider: a token of its own per rollout, and the warm workers still serve
// them (the token travels with the task, not in the worker's start environment).
const rolloutGateway = new Gateway({ env: {} });
const gatewayRolloutMs = await timeRollouts(40, pool, { providers: ['openai'], gateway: rolloutGateway });
await rolloutGateway.close();
await pool.destroy();
await timeRollouts(3, sandbox);
const sandboxMs = await timeRollouts(40, sandbox);
await sandbox.destroy();
const reusePool = new AgentPool({ maxThreads: 1, reuse: true });
// As --reuse-workers runs them: an eval prepares its agent once (PreparedAgents), not per rollout.
const reusePrepared = { preparedAgents: new PreparedAgents() };
// The first rollouts of a process run Silo's code before V8 has optimised it (~1.5-2x slower here):
// they are reported apart (reuseFirstMs); an eval's thousands run at the rate measured after them.
const reuseFirstMs = await timeRollouts(50, reusePool, reusePrepared);
// What the disk charges for a file now, and the same rollouts with their artifacts in memory
// (tmpfs, where /dev/shm is one): most of reuse mode's rollout is creating its files, whose cost on
// ext4 without a journal swings from ~0.05 to ~1 ms each with what was removed in the last minutes.
const fsUsBeforeReuse = fileCreationUs(100);
const reuseMs = await timeRollouts(100, reusePool, reusePrepared);
const memoryOut = memoryFolder();
const reuseInMemoryMs = memoryOut ? await timeRollouts(100, reusePool, { ...reusePrepared, outDir: memoryOut }) : null;
await reusePool.destroy();

// sandbox
log('sandbox levels …');
const sandboxLevels = await benchSandboxLevels({ out });

// concurrency
log('concurrency (256 rollouts × 5 × 200 ms, five turns) …');
const ROLLOUTS = 256;
const fsUsBeforeConcurrency = fileCreationUs(200);
const evalWall = async (options) => {
  const t = performance.now();
  const s = await runEval({ paths: ['fixtures/bench/tasks.mjs'], task: ['bench/wait'], agent: 'fixtures/agents/bench-waiter.mjs', trials: ROLLOUTS, concurrency: ROLLOUTS, outDir: out, ...options });
  const ms = performance.now() - t;
  if (s.totals.passed !== ROLLOUTS) throw new Error(`concurrency bench passed ${s.totals.passed} of ${ROLLOUTS}`);
  return ms;
};
// Five turns of: Silo's default and a bare Worker per agent (its shape without Silo), then Silo
// with --reuse-workers (warm, reused workers) and the threads --reuse-workers would use with a
// fresh module instance per agent (its shape without Silo); Silo first in one turn, the bare run
// first in the next. Each ratio is the median of the turns' pairs: one eval against one bare run
// swung from 0.94 to 1.26 within one bench run on this 2-core VM.
const TURNS = 5;
const turns = [];
// The host and every process under it (the sandbox process holds the workers now), in the first turn.
let peakRss = treeRss();
for (let i = 0; i < TURNS; i++) {
  const sampler = i === 0 ? setInterval(() => (peakRss = Math.max(peakRss, treeRss())), 20) : undefined;
  const siloFirst = i % 2 === 0;
  const turn = {};
  if (!siloFirst) turn.bareWorkersMs = await bareWorkers(ROLLOUTS);
  turn.wallMs = await evalWall({});
  clearInterval(sampler);
  if (siloFirst) turn.bareWorkersMs = await bareWorkers(ROLLOUTS);
  const bareThreadsOnce = () => bareThreads(ROLLOUTS, Math.ceil(ROLLOUTS / agentsPerReusedWorker(ROLLOUTS)));
  if (!siloFirst) turn.bareThreadsMs = await bareThreadsOnce();
  turn.reuseWallMs = await evalWall({ reuseWorkers: true });
  if (siloFirst) turn.bareThreadsMs = await bareThreadsOnce();
  turns.push(turn);
}
// The --reuse-workers case as a user meets it: the whole `silo eval` command (Node's start, the
// CLI, the task file, the sandbox, the artifacts and the report) against a whole process that runs
// the bare threads (Node's start, then the same threads), and against one that runs them in a child
// process (the process boundary's own cost). In turns, the three in an order that rotates from turn
// to turn and is reversed every other turn, so that each runs before and after each other.
const BIN = fileURLToPath(new URL('../dist/bundle/bin.js', import.meta.url));
const BARE = fileURLToPath(new URL('./lib/bare-concurrency.mjs', import.meta.url));
// Each run's wall, and the CPU time the whole machine was busy meanwhile (every core, every
// process: the sandbox's too, which the command's own resource usage does not count once it is
// killed), from /proc/stat; null where there is none.
const processMs = (args) =>
  new Promise((resolve, reject) => {
    const busy = busyCpuMs();
    const t = performance.now();
    execFile(process.execPath, args, { maxBuffer: 2 ** 24 }, (err, _stdout, stderr) => {
      if (err) return reject(new Error(`${args.join(' ')} failed: ${stderr || err.message}`));
      const ms = performance.now() - t;
      const after = busyCpuMs();
      resolve({ ms, busyMs: busy === null || after === null ? null : after - busy });
    });
  });
const cliTurns = [];
for (let i = 0; i < TURNS; i++) {
  const cli = () => processMs([BIN, 'eval', 'fixtures/bench/tasks.mjs', '-t', 'bench/wait', '-a', 'fixtures/agents/bench-waiter.mjs', '-k', String(ROLLOUTS), '-c', String(ROLLOUTS), '--reuse-workers', '--out', out, '-r', 'json', '--output', join(out, 'cli-report.json')]);
  const threads = String(Math.ceil(ROLLOUTS / agentsPerReusedWorker(ROLLOUTS)));
  const bare = () => processMs([BARE, 'threads', String(ROLLOUTS), threads]);
  // The same threads in a child process with an empty environment: the process boundary alone.
  const child = () => processMs([BARE, 'child-threads', String(ROLLOUTS), threads]);
  const turn = {};
  const runs = [
    async () => ({ ms: turn.cliMs, busyMs: turn.cliBusyMs } = await cli()),
    async () => ({ ms: turn.bareMs, busyMs: turn.bareBusyMs } = await bare()),
    async () => ({ ms: turn.childMs } = await child()),
  ];
  const order = runs.map((_, k) => (i + k) % runs.length);
  if (i % 2 === 1) order.reverse();
  for (const k of order) await runs[k]();
  cliTurns.push(turn);
}
const cliToBare = cliTurns.map((t) => t.cliMs / t.bareMs);
const childToBare = cliTurns.map((t) => t.childMs / t.bareMs);
const cliToChild = cliTurns.map((t) => t.cliMs / t.childMs);
const cliBusy = cliTurns.every((t) => t.cliBusyMs !== null && t.bareBusyMs !== null);

const idealMs = 5 * 200;
const turnsOf = (key) => turns.map((t) => t[key]);
const wallMs = median(turnsOf('wallMs'));
const reuseWallMs = median(turnsOf('reuseWallMs'));
const defaultToBare = turns.map((t) => t.wallMs / t.bareWorkersMs);
const reuseToBare = turns.map((t) => t.reuseWallMs / t.bareThreadsMs);

// gateway
log('gateway …');
const latencyDir = mkdtempSync(join(out, 'gateway-'));
const latency = await gatewayLatency({ dir: latencyDir });
// The gateway alone under 256 clients streaming at once, four rounds: its heap after each.
const memory = await gatewayMemory({ rounds: 4 });
// 256 rollouts streaming through one gateway: each agent makes 5 streamed requests of 20 chunks
// 10 ms apart (~200 ms each, as the waiting agents above), the upstream being the host's.
const streamUpstream = await benchUpstream({ chunks: 20, gapMs: 10 });
process.env.OPENAI_BASE_URL = `${streamUpstream.origin}/v1`;
process.env.OPENAI_API_KEY = 'sk-bench';
const streamBatch = async () => {
  let peak = treeRss();
  const sample = setInterval(() => (peak = Math.max(peak, treeRss())), 20);
  const t = performance.now();
  const s = await runEval({ paths: ['fixtures/bench/tasks.mjs'], task: ['bench/wait'], agent: 'fixtures/agents/bench-streamer.mjs', providers: ['openai'], trials: ROLLOUTS, concurrency: ROLLOUTS, modelConcurrency: ROLLOUTS, outDir: out });
  const ms = performance.now() - t;
  clearInterval(sample);
  if (s.totals.passed !== ROLLOUTS) throw new Error(`gateway bench passed ${s.totals.passed} of ${ROLLOUTS}`);
  if (s.totals.usage?.requests !== 5 * ROLLOUTS) throw new Error(`gateway bench recorded ${s.totals.usage?.requests} model requests`);
  return { ms, peak, hostRss: process.memoryUsage().rss };
};
const streamFirst = await streamBatch();
const streamSecond = await streamBatch();
await streamUpstream.close();
delete process.env.OPENAI_BASE_URL;
delete process.env.OPENAI_API_KEY;

// worldScaling
log('worldScaling …');
const { timings, makeWorld } = await import('../fixtures/bench/worlds.tasks.mjs');
const worlds = await byId('fixtures/bench/worlds.tasks.mjs');
const worldPool = new AgentPool({ maxThreads: 2 });
const worldScaling = [];
for (const [label, bytes] of [['10kb', 10_000], ['1mb', 1_000_000], ['10mb', 10_000_000]]) {
  const world = makeWorld(bytes);
  const worldBytes = JSON.stringify(world).length;
  const clones = [];
  for (let i = 0; i < 5; i++) {
    const t = performance.now();
    structuredClone(world);
    clones.push(performance.now() - t);
  }
  const host = [];
  // Six counted: one of them can take a full collection of the host's heap (tens of ms at 10 MB).
  for (let i = 0; i < 7; i++) {
    timings.createStateMs = 0;
    timings.verifyMs = 0;
    const t = performance.now();
    const r = await runRollout({ task: worlds.get(`bench/world-${label}`), agent: 'fixtures/agents/bench-toucher.mjs', outDir: out, pool: worldPool, seed: 1 });
    const wall = performance.now() - t;
    if (r.status !== 'passed') throw new Error(`world bench failed: ${JSON.stringify(r.checks)}`);
    // The first rollout of an environment also pays for the freshness probe's second createState.
    if (i > 0) host.push(wall - timings.createStateMs - timings.verifyMs);
  }
  const cloneMs = median(clones);
  const hostMs = median(host);
  // One tool call that changes two values, with its change records, on the live tracked world.
  const built = await buildWorld(worlds.get(`bench/world-${label}`).environment, 1);
  const toolbox = bindTools(worlds.get(`bench/world-${label}`).environment, built.view, built.ctx, built.tracker);
  const calls = [];
  for (let i = 0; i < 300; i++) {
    const t = performance.now();
    const scope = built.tracker.beginCall();
    const r = await toolbox.call('touch', { id: `r${i % 20}` });
    const changes = built.tracker.endCall(scope);
    calls.push(performance.now() - t);
    if (!r.ok || changes.length === 0) throw new Error(`world bench call: ${JSON.stringify(r)} ${JSON.stringify(changes)}`);
  }
  const callUs = median(calls.slice(50)) * 1000;
  worldScaling.push({ worldBytes, cloneMs: round(cloneMs), hostMs: round(hostMs), ratio: round(hostMs / cloneMs, 2), callWithChangesUs: round(callUs, 1) });
}
await worldPool.destroy();

// retail: the host work of one rollout on the tau-bench retail world (~1.6 MB), phase by phase,
// on the gold actions of a dev task; and a whole rollout with the oracle agent.
log('retail …');
const { analyzeWorld } = await import('../dist/src/rollout/plain.js');
const { WriteTracker } = await import('../dist/src/rollout/track.js');
const retailTasks = await byId('fixtures/retail/tasks.ts');
const retailTask = retailTasks.get('retail/dev/0');
const env = retailTask.environment;
const phases = { createStateMs: [], analyzeMs: [], hashMs: [], diffMs: [], initialMs: [], verifyMs: [] };
const time = (key, fn) => {
  const t = performance.now();
  const value = fn();
  phases[key].push(performance.now() - t);
  return value;
};
for (let i = 0; i < 7; i++) {
  const ctx = createContext(1, undefined);
  const state = await time('createStateMs', () => env.createState(ctx));
  if (time('analyzeMs', () => analyzeWorld(state)) !== null) throw new Error('the retail world should be trackable');
  time('hashMs', () => hashWorld(state));
  const tracker = new WriteTracker(state);
  for (const call of retailTask.solution.calls) {
    try {
      await env.tools.find((t) => t.name === call.name).run(tracker.view, call.input, ctx);
    } catch {
      // gold actions may fail, as in tau-bench
    }
  }
  time('diffMs', () => tracker.diff());
  // What a verifier that reads `initial` costs on top (retail's does).
  const initial = time('initialMs', () => tracker.initial());
  const t = performance.now();
  await retailTask.verify({ initial, final: state, output: String(retailTask.solution.output ?? ''), trace: [] });
  phases.verifyMs.push(performance.now() - t);
}
const retailPhases = Object.fromEntries(Object.entries(phases).map(([k, xs]) => [k, round(median(xs.slice(1)), 2)]));
const retailPool = new AgentPool({ maxThreads: 2 });
const retailRollouts = [];
for (let i = 0; i < 6; i++) {
  const t = performance.now();
  await runRollout({ task: retailTask, agent: 'fixtures/retail/gold/oracle.ts', outDir: out, pool: retailPool, seed: 1 });
  retailRollouts.push(performance.now() - t);
}
await retailPool.destroy();
const retail = {
  worldBytes: JSON.stringify(await env.createState(createContext(1, undefined))).length,
  ...retailPhases,
  siloHostMs: round(retailPhases.analyzeMs + retailPhases.hashMs + retailPhases.diffMs, 2),
  rolloutMs: round(median(retailRollouts.slice(1)), 1),
};
rmSync(out, { recursive: true, force: true });
if (memoryOut) rmSync(memoryOut, { recursive: true, force: true });

const result = {
  node: process.versions.node,
  fileSystem: { dir: out, folderWithFileUs: round(fsUs, 0), slow: fsUs > SLOW_FILES_US || fsUsBeforeConcurrency > SLOW_FILES_US },
  cli: cold.cli,
  coldRun: cold.coldRun,
  heavyAgent: cold.heavy,
  toolCall: {
    // The CPUs the measurement ran on ("0": pinned with taskset -c 0, host, sandbox and workers).
    cpus: toolCall.cpus,
    pinned: toolCall.pinned,
    bareRttUs: toolCall.thread.bareUs,
    siloUs: toolCall.thread.siloUs,
    ratio: toolCall.thread.ratio,
    // Through the sandbox (the default isolation), against the same hops without Silo.
    sandboxLevel: toolCall.sandbox.level,
    sandboxUs: toolCall.sandbox.siloUs,
    bareProcessRttUs: toolCall.sandbox.bareUs,
    sandboxRatio: toolCall.sandbox.ratio,
  },
  userMessage: {
    // One user.send and its reply (a scripted user answering at once), in threads and through the
    // sandbox; against a tool call and the bare round trip timed the same way (unpinned).
    siloUs: round(messageUs, 1),
    toolCallUs: round(siloUs, 1),
    sandboxToolCallUs: round(sandboxCallUs, 1),
    ratioToBareRtt: round(messageUs / bareRttUs, 2),
    ratioToToolCall: round(messageUs / siloUs, 2),
    sandboxUs: round(sandboxMessageUs, 1),
    sandboxRatioToToolCall: round(sandboxMessageUs / sandboxCallUs, 2),
  },
  rollout: {
    bareWorkerMs: round(bareWorkerMs, 2),
    isolatedMs: round(isolatedMs, 2),
    ratio: round(isolatedMs / bareWorkerMs, 2),
    reuseMs: round(reuseMs, 2),
    reuseFirstMs: round(reuseFirstMs, 2),
    // A folder with one file on the artifacts' disk just before reuseMs, µs; reuseMs again with the artifacts in /dev/shm (null without one).
    reuseFolderWithFileUs: round(fsUsBeforeReuse, 0),
    reuseInMemoryMs: reuseInMemoryMs === null ? null : round(reuseInMemoryMs, 2),
    sandboxMs: round(sandboxMs, 2),
    withProviderMs: round(gatewayRolloutMs, 2),
  },
  sandboxLevels,
  concurrency: {
    rollouts: ROLLOUTS,
    turns: TURNS,
    idealMs,
    // Medians of the turns.
    wallMs: round(wallMs, 0),
    ratio: round(wallMs / idealMs, 2),
    peakRssMb: round(peakRss / 2 ** 20, 0),
    reuseWallMs: round(reuseWallMs, 0),
    reuseRatio: round(reuseWallMs / idealMs, 2),
    bareWorkersMs: round(median(turnsOf('bareWorkersMs')), 0),
    bareThreadsMs: round(median(turnsOf('bareThreadsMs')), 0),
    // Each turn's Silo against the same turn's bare run, and the median of those (target ≤ 1.15).
    defaultToBareWorkers: defaultToBare.map((x) => round(x, 3)),
    defaultToBareWorkersRatio: round(median(defaultToBare), 3),
    reuseToBareThreads: reuseToBare.map((x) => round(x, 3)),
    reuseToBareThreadsRatio: round(median(reuseToBare), 3),
    // Every turn's walls, ms.
    turnsMs: turns.map((t) => Object.fromEntries(Object.entries(t).map(([k, v]) => [k, round(v, 0)]))),
    // The --reuse-workers case as whole processes: `silo eval` against a process running the bare
    // threads, each turn's ratio and their median.
    cliReuseMs: round(median(cliTurns.map((t) => t.cliMs)), 0),
    bareThreadsProcessMs: round(median(cliTurns.map((t) => t.bareMs)), 0),
    cliReuseToBareThreads: cliToBare.map((x) => round(x, 3)),
    cliReuseToBareThreadsRatio: round(median(cliToBare), 3),
    // The bare threads in a child process (empty environment): the process boundary's own cost,
    // and Silo's command against that (what is left is Silo's own work).
    bareThreadsChildProcessMs: round(median(cliTurns.map((t) => t.childMs)), 0),
    childProcessToBareThreads: childToBare.map((x) => round(x, 3)),
    childProcessToBareThreadsRatio: round(median(childToBare), 3),
    cliReuseToChildProcess: cliToChild.map((x) => round(x, 3)),
    cliReuseToChildProcessRatio: round(median(cliToChild), 3),
    // CPU time the machine was busy during each (all cores, all processes; null without /proc/stat), ms.
    cliReuseBusyCpuMs: cliBusy ? round(median(cliTurns.map((t) => t.cliBusyMs)), 0) : null,
    bareThreadsProcessBusyCpuMs: cliBusy ? round(median(cliTurns.map((t) => t.bareBusyMs)), 0) : null,
    // A folder with one file, as fileSystem.folderWithFileUs, measured just before the turns.
    folderWithFileUs: round(fsUsBeforeConcurrency, 0),
  },
  gateway: {
    directMsPerRequest: round(latency.directMs),
    gatewayMsPerRequest: round(latency.gatewayMs),
    addedMsPerRequest: round(latency.addedMsPerRequest),
    chunksPerStream: latency.chunks,
    directStreamMs: round(latency.directStreamMs),
    gatewayStreamMs: round(latency.gatewayStreamMs),
    addedMsPerChunk: round(latency.addedMsPerChunk, 4),
    clientsStreaming: memory.clients,
    clientsFailed: memory.failed,
    clientsWallMsPerRound: round(memory.wallMsPerRound, 0),
    clientsHeapMbAfterRounds: memory.heapMbAfterRounds.map((mb) => round(mb, 1)),
    clientsPeakRssMb: round(memory.peakRssMb, 0),
    streamingRollouts: ROLLOUTS,
    streamingWallMs: round(streamFirst.ms, 0),
    streamingWallMsAgain: round(streamSecond.ms, 0),
    streamingPeakRssMb: round(streamFirst.peak / 2 ** 20, 0),
    streamingPeakRssMbAgain: round(streamSecond.peak / 2 ** 20, 0),
    hostRssMbAfter: [round(streamFirst.hostRss / 2 ** 20, 0), round(streamSecond.hostRss / 2 ** 20, 0)],
  },
  worldScaling,
  retail,
};

if (json) {
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
} else {
  const r = result;
  console.log(`Silo bench · node ${r.node} · ${new Date().toISOString()}`);
  console.log(`artifacts in ${r.fileSystem.dir}: a folder with one file (mkdir, write, rename) costs ${r.fileSystem.folderWithFileUs} µs here now, ${r.concurrency.folderWithFileUs} µs before the 256 at once`);
  if (r.fileSystem.slow) {
    console.log(
      `  slow (over ${SLOW_FILES_US} µs): files are slow to create here now, as on ext4 without a journal in the minutes after many files were removed; reuse mode and the 256 at once include it. Run again after a few minutes without removing files, or with OUT= on another file system.`,
    );
  }
  console.log('');
  console.log(describeCold({ ...r, heavy: r.heavyAgent }));
  console.log(describeToolCall({ ...toolCall, cpus: r.toolCall.cpus, pinned: r.toolCall.pinned }));
  console.log(`user message  Silo user.send + a scripted reply ${r.userMessage.siloUs} µs · ratio to the bare round trip ${r.userMessage.ratioToBareRtt} · to a tool call ${r.userMessage.ratioToToolCall} · through the sandbox ${r.userMessage.sandboxUs} µs (${r.userMessage.sandboxRatioToToolCall}× its tool call)`);
  console.log(`rollout       bare worker ${r.rollout.bareWorkerMs} ms · Silo rollout ${r.rollout.isolatedMs} ms · ratio ${r.rollout.ratio} (target ≤ 1.25) · reuse mode ${r.rollout.reuseMs} ms (target ≤ 2; the first 50 ${r.rollout.reuseFirstMs} ms; a folder with a file cost ${r.rollout.reuseFolderWithFileUs} µs on the disk then${r.rollout.reuseInMemoryMs === null ? '' : `; with the artifacts in memory ${r.rollout.reuseInMemoryMs} ms`}) · in the sandbox process ${r.rollout.sandboxMs} ms · granted a provider (a gateway token each) ${r.rollout.withProviderMs} ms`);
  console.log(describeSandboxLevels(r.sandboxLevels));
  console.log(`concurrency   ${r.concurrency.rollouts} rollouts · ideal ${r.concurrency.idealMs} ms · wall ${r.concurrency.wallMs} ms · ratio ${r.concurrency.ratio} to the ideal (its old target, ≤ 1.2, needs cores for 256 threads at once: the targets are against the bare runs, next line) · peak RSS ${r.concurrency.peakRssMb} MiB (target < 3072) · with --reuse-workers ${r.concurrency.reuseWallMs} ms (ratio ${r.concurrency.reuseRatio})`);
  const c = r.concurrency;
  console.log(`              without Silo: a Worker per agent ${c.bareWorkersMs} ms (Silo's default ${c.defaultToBareWorkersRatio}× that, target ≤ 1.15; turns ${c.defaultToBareWorkers.join(', ')}) · reused threads, a fresh module instance per agent ${c.bareThreadsMs} ms (--reuse-workers ${c.reuseToBareThreadsRatio}× that, target ≤ 1.15; turns ${c.reuseToBareThreads.join(', ')})`);
  console.log(`              medians of ${c.turns} turns · a folder with one file cost ${c.folderWithFileUs} µs just before them`);
  console.log(`              as whole processes: \`silo eval --reuse-workers\` ${c.cliReuseMs} ms · a process running the bare threads ${c.bareThreadsProcessMs} ms · ${c.cliReuseToBareThreadsRatio}× (turns ${c.cliReuseToBareThreads.join(', ')})`);
  console.log(`              the bare threads in a child process (the process boundary alone, no sandbox) ${c.bareThreadsChildProcessMs} ms · ${c.childProcessToBareThreadsRatio}× the bare process (turns ${c.childProcessToBareThreads.join(', ')}) · Silo ${c.cliReuseToChildProcessRatio}× that (turns ${c.cliReuseToChildProcess.join(', ')})`);
  if (c.cliReuseBusyCpuMs !== null) console.log(`              CPU time the machine was busy meanwhile (all cores, the sandbox included): Silo ${c.cliReuseBusyCpuMs} ms · bare ${c.bareThreadsProcessBusyCpuMs} ms`);
  const g = r.gateway;
  console.log(`gateway       per request: direct ${g.directMsPerRequest} ms · through the gateway ${g.gatewayMsPerRequest} ms · added ${g.addedMsPerRequest} ms (target ≤ 1) · per chunk of a ${g.chunksPerStream}-chunk stream: added ${g.addedMsPerChunk} ms (target ≤ 0.2)`);
  console.log(`              ${g.clientsStreaming} clients streaming at once (5 × 20 chunks 10 ms apart, 4 rounds): ${g.clientsWallMsPerRound} ms a round · heap after each ${g.clientsHeapMbAfterRounds.join(' → ')} MiB · peak RSS ${g.clientsPeakRssMb} MiB${g.clientsFailed ? ` · ${g.clientsFailed} failed` : ''}`);
  console.log(`              ${g.streamingRollouts} rollouts streaming through it (5 × ~200 ms each): wall ${g.streamingWallMs} ms, then ${g.streamingWallMsAgain} ms (waiting agents above: ${r.concurrency.wallMs} ms) · peak RSS ${g.streamingPeakRssMb} MiB, then ${g.streamingPeakRssMbAgain} MiB (waiting agents: ${r.concurrency.peakRssMb} MiB) · host RSS after each ${g.hostRssMbAfter.join(' → ')} MiB`);
  for (const w of r.worldScaling) {
    console.log(`world ${String(Math.round(w.worldBytes / 1000)).padStart(6)} KB  structuredClone ${w.cloneMs} ms · Silo host work ${w.hostMs} ms · ratio ${w.ratio} · one call with its changes ${w.callWithChangesUs} µs`);
  }
  const t = r.retail;
  console.log(
    `retail       ${Math.round(t.worldBytes / 1000)} KB world · createState ${t.createStateMs} ms · analyze ${t.analyzeMs} ms · hash ${t.hashMs} ms · tracked diff ${t.diffMs} ms · initial for the verifier ${t.initialMs} ms · verify ${t.verifyMs} ms · Silo's part ${t.siloHostMs} ms · whole rollout (oracle, TypeScript) ${t.rolloutMs} ms`,
  );
  console.log('\n(targets from the eval-at-scale and fast-starts issues; worldScaling aims for ≤ 0.25 at 10 MB)');
}
