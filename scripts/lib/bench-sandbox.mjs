// What each level of the sandbox costs (src/sandbox/jail.ts): bubblewrap's jail, namespaces only
// (unshare), a plain process. Against a bare `node -e 0` started as a child process, in the same run:
//   probeMs      the once-per-process checks of what this machine allows (bwrap --help, `node
//                --version` in the jail), in a fresh process
//   nodeMs       `node -e 0` started with each level's command line (the jail's own set-up: its
//                namespaces and mounts), against the same bare
//   coldMs       a new sandbox: its first rollout of a trivial agent (sandbox start, the worker's
//                start, the rollout), per level
//   warmMs       back-to-back trivial rollouts in a running sandbox, per level
//   toolCallUs   one tool call through the sandbox, per level
// The jail's cost is its numbers minus unshare's. `node scripts/lib/bench-sandbox.mjs` runs it alone.
import { execFile, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { loadTasks, runRollout } from '../../dist/src/index.js';
import { SandboxPool } from '../../dist/src/sandbox/pool.js';
import { launch, unavailable } from '../../dist/src/sandbox/jail.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (x, digits = 2) => Number(x.toFixed(digits));

/** Start a bare Node process that exits at once; ms. */
function bareProcessMs() {
  const t = performance.now();
  return new Promise((resolve) => spawn(process.execPath, ['-e', '0'], { stdio: 'ignore', env: {} }).once('exit', () => resolve(performance.now() - t)));
}

/** Start `node -e 0` with a level's command line (as the sandbox is started) and wait for its exit; ms. */
function levelProcessMs(level) {
  const { command, args, inputs } = launch(level, { noNetwork: false, readable: [] });
  const t = performance.now();
  const child = spawn(command, [...args, '-e', '0'], { stdio: ['ignore', 'ignore', 'ignore', 'ignore', ...inputs.map(() => 'pipe')], env: {}, detached: true });
  inputs.forEach((text, i) => child.stdio[4 + i].end(text));
  return new Promise((resolve) => child.once('exit', () => resolve(performance.now() - t)));
}

/** The once-per-process probe of the jail, in a fresh process; ms. */
function probeMs() {
  const source = `import { unavailable } from ${JSON.stringify(new URL('../../dist/src/sandbox/jail.js', import.meta.url).href)};
    const t = performance.now(); const why = unavailable('bwrap'); console.log(JSON.stringify({ ms: performance.now() - t, why }));`;
  return new Promise((resolve, reject) =>
    execFile(process.execPath, ['--input-type=module', '-e', source], (err, stdout) => (err ? reject(err) : resolve(JSON.parse(stdout).ms))),
  );
}

/**
 * Measures every available level; returns the numbers (levels not available here are left out).
 * `out`: a folder to write the runs under, left for the caller to remove (without it, a temporary
 * folder removed at the end).
 */
export async function benchSandboxLevels({ colds = 5, warms = 30, out: under } = {}) {
  const out = mkdtempSync(join(under ?? tmpdir(), 'silo-bench-sandbox-'));
  const tasks = new Map((await loadTasks([join(root, 'fixtures/bench/tasks.mjs')])).map((t) => [t.task.id, t.task]));
  const agent = join(root, 'fixtures/agents/bench-caller.mjs');
  const levels = ['process', 'unshare', 'bwrap'].filter((level) => unavailable(level) === null);
  // Interleaved, so that load on the machine weighs on every level alike.
  const bare = [];
  const node = Object.fromEntries(levels.map((l) => [l, []]));
  for (let i = 0; i < 15; i++) {
    bare.push(await bareProcessMs());
    for (const level of levels) node[level].push(await levelProcessMs(level));
  }
  const probes = [];
  if (levels.includes('bwrap')) for (let i = 0; i < 3; i++) probes.push(await probeMs());

  const rollout = async (pool, task) => {
    const t = performance.now();
    const r = await runRollout({ task, agent, outDir: out, pool, seed: 1, limits: { maxToolCalls: 1000 } });
    if (r.status !== 'passed') throw new Error(`sandbox bench rollout failed: ${r.termination} ${JSON.stringify(r.error ?? r.checks)} ${r.output}`);
    return { ms: performance.now() - t, run: JSON.parse(readFileSync(join(r.runDir, 'run.json'), 'utf8')) };
  };
  const cold = Object.fromEntries(levels.map((l) => [l, []]));
  for (let i = 0; i < colds; i++) {
    for (const level of levels) {
      const pool = new SandboxPool({ sandbox: level, maxThreads: 4, warn: () => {} });
      cold[level].push((await rollout(pool, tasks.get('bench/calls-0'))).ms);
      await pool.destroy();
    }
  }
  const warm = {};
  const call = {};
  for (const level of levels) {
    const pool = new SandboxPool({ sandbox: level, maxThreads: 4, warn: () => {} });
    for (let i = 0; i < 3; i++) await rollout(pool, tasks.get('bench/calls-0'));
    const samples = [];
    for (let i = 0; i < warms; i++) samples.push((await rollout(pool, tasks.get('bench/calls-0'))).ms);
    warm[level] = median(samples);
    const calls = [];
    for (let i = 0; i < 3; i++) {
      const { run } = await rollout(pool, tasks.get('bench/calls-1000'));
      calls.push(((run.agentTimeMs + run.toolTimeMs) / run.toolCalls) * 1000);
    }
    call[level] = median(calls);
    await pool.destroy();
  }
  if (under === undefined) rmSync(out, { recursive: true, force: true });
  return {
    bareProcessMs: round(median(bare)),
    ...(probes.length ? { probeMs: round(median(probes)) } : {}),
    nodeMs: Object.fromEntries(levels.map((l) => [l, round(median(node[l]))])),
    coldMs: Object.fromEntries(levels.map((l) => [l, round(median(cold[l]))])),
    warmMs: Object.fromEntries(levels.map((l) => [l, round(warm[l])])),
    toolCallUs: Object.fromEntries(levels.map((l) => [l, round(call[l], 1)])),
  };
}

/** One line of text for the numbers. */
export function describeSandboxLevels(r) {
  const per = (numbers, unit) => Object.entries(numbers).map(([l, v]) => `${l} ${v} ${unit}`).join(' · ');
  const jail = r.coldMs.bwrap !== undefined && r.coldMs.unshare !== undefined;
  return [
    `sandbox       bare node process ${r.bareProcessMs} ms · the same started as the sandbox is: ${per(r.nodeMs, 'ms')}${r.probeMs === undefined ? '' : ` · checks once per process ${r.probeMs} ms`}`,
    `              first rollout in a new sandbox: ${per(r.coldMs, 'ms')}${jail ? ` (the jail adds ${round(r.coldMs.bwrap - r.coldMs.unshare)} ms per sandbox, ${round(r.coldMs.bwrap / r.bareProcessMs)}× a bare process in all)` : ''}`,
    `              rollouts in a running sandbox: ${per(r.warmMs, 'ms')}${jail ? ` (the jail adds ${round(r.warmMs.bwrap - r.warmMs.unshare)} ms per rollout)` : ''}`,
    `              tool call: ${per(r.toolCallUs, 'µs')}`,
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const r = await benchSandboxLevels();
  console.log(process.argv.includes('--json') ? JSON.stringify(r, null, 2) : describeSandboxLevels(r));
}
