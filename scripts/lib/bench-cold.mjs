// Cold starts, each next to its bare baseline, measured in turns (A B A B ...) in the same run:
//   cli      `silo --version` against `node -e 0` (and `silo --help`, which loads every command's definition)
//   coldRun  `silo run` of one trivial task with a trivial agent, default isolation, the whole
//            command, against the bare path it cannot do without: a process that starts a child
//            process, which starts a worker that imports the agent module and sends one message
//            up; and where the time of the cold run goes (marks the command takes, read from
//            runs preloaded with cold-marks.mjs, and the rollout's own phases from its run.json)
//   heavy    the same whole `silo run` with a TypeScript agent that imports a large SDK (the MCP
//            SDK's client: fixtures/agents/heavy-sdk.ts), against the bare path importing the SDK
//   typescriptTaskFile  `silo run` of a task file written in TypeScript that imports 'silo'
//            (fixtures/bench/imports-silo.tasks.ts: compiled by the untimed run before, then the
//            kept module imported, src/task-compile.ts) against the same task file in JavaScript
//            (fixtures/graph/imports-silo.tasks.mjs): what TypeScript costs a cold command
// `node scripts/lib/bench-cold.mjs` runs it alone (`--json` for machines).
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));
// What `silo` runs once installed (package.json's `bin`).
const BIN = join(root, JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).bin.silo);
const MARKS = join(root, 'scripts/lib/cold-marks.mjs');
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (x, digits = 1) => Number(x.toFixed(digits));

/** Runs a command to its exit; its wall time (ms) and what it printed. */
function timed(command, args, env = {}) {
  const t = performance.now();
  return new Promise((resolve, reject) =>
    execFile(command, args, { cwd: root, env: { ...process.env, NO_COLOR: '1', ...env }, maxBuffer: 2 ** 24 }, (err, stdout, stderr) => {
      const ms = performance.now() - t;
      if (err && typeof err.code !== 'number') return reject(err);
      resolve({ ms, code: err ? err.code : 0, stdout, stderr });
    }),
  );
}

/** The bare path of a rollout: a child process whose worker imports `agent` and posts one message up. */
const bareRunScript = (agent, expect = 'function') => `
  const { spawn } = require('node:child_process');
  const child = spawn(process.execPath, ['-e', ${JSON.stringify(`
    const { Worker } = require('node:worker_threads');
    const w = new Worker(${JSON.stringify(`import(${JSON.stringify(agent)}).then((m) => require('node:worker_threads').parentPort.postMessage(typeof m.${expect === 'function' ? 'default' : 'Client'}))`)}, { eval: true });
    w.once('message', (m) => process.stdout.write(String(m)));`)}], { stdio: ['ignore', 'pipe', 'inherit'] });
  let said = '';
  child.stdout.on('data', (c) => (said += c));
  child.on('exit', () => { if (said !== 'function') { console.error('bare run: ' + said); process.exit(1); } });`;

/**
 * Measures both cases; `rounds` turns of each. `task`/`taskId`/`agent`: the cold run's (by default
 * the bench's trivial task and agent). `out`: a folder to write the runs under, left for the caller
 * to remove (without it, a temporary folder removed at the end).
 */
export async function benchCold({ rounds = 7, task = 'fixtures/bench/tasks.mjs', taskId = 'bench/calls-0', agent = 'fixtures/agents/bench-caller.mjs', out: under } = {}) {
  const out = mkdtempSync(join(under ?? tmpdir(), 'silo-bench-cold-'));
  const runArgs = ['run', task, '-t', taskId, '--agent', agent, '--out', out, '--json'];
  const samples = { node: [], version: [], help: [], helpRatio: [], bare: [], run: [], versionRatio: [], runRatio: [], js: [], ts: [], tsRatio: [] };
  const fileArgs = (file) => ['run', file, '--agent', 'fixtures/agents/bench-caller.mjs', '--out', out];
  const parts = [];
  try {
    // One of each first, not counted: the file system's and the loader's caches warm.
    await timed(process.execPath, ['-e', '0']);
    await timed(process.execPath, [BIN, '--version']);
    await timed(process.execPath, ['-e', bareRunScript(join(root, agent))]);
    await timed(process.execPath, [BIN, ...runArgs]);
    await timed(process.execPath, [BIN, ...fileArgs('fixtures/graph/imports-silo.tasks.mjs')]);
    await timed(process.execPath, [BIN, ...fileArgs('fixtures/bench/imports-silo.tasks.ts')]);
    for (let i = 0; i < rounds; i++) {
      const node = (await timed(process.execPath, ['-e', '0'])).ms;
      const version = (await timed(process.execPath, [BIN, '--version'])).ms;
      // --version loads commander and no command; --help loads every command's definition.
      const help = (await timed(process.execPath, [BIN, '--help'])).ms;
      const bare = await timed(process.execPath, ['-e', bareRunScript(join(root, agent))]);
      if (bare.code !== 0) throw new Error(`the bare run failed: ${bare.stderr}`);
      const run = await timed(process.execPath, [BIN, ...runArgs]);
      if (run.code !== 0) throw new Error(`the cold run failed (exit ${run.code}): ${run.stderr}${run.stdout}`);
      samples.node.push(node);
      samples.version.push(version);
      samples.help.push(help);
      samples.helpRatio.push(help / node);
      samples.bare.push(bare.ms);
      samples.run.push(run.ms);
      samples.versionRatio.push(version / node);
      samples.runRatio.push(run.ms / bare.ms);
      const js = await timed(process.execPath, [BIN, ...fileArgs('fixtures/graph/imports-silo.tasks.mjs')]);
      const ts = await timed(process.execPath, [BIN, ...fileArgs('fixtures/bench/imports-silo.tasks.ts')]);
      if (js.code !== 0 || ts.code !== 0) throw new Error(`a run of the task file in JavaScript or TypeScript failed: ${js.stderr}${ts.stderr}`);
      samples.js.push(js.ms);
      samples.ts.push(ts.ms);
      samples.tsRatio.push(ts.ms / js.ms);
      // The same run again with its marks recorded (the preload costs a little: not timed above).
      const file = join(out, `marks-${i}.json`);
      const marked = await timed(process.execPath, ['--import', MARKS, BIN, ...runArgs], { SILO_BENCH_MARKS: file });
      if (marked.code !== 0) throw new Error(`the cold run failed (exit ${marked.code}): ${marked.stderr}`);
      const { marks, exitAt, bootstrapMs } = JSON.parse(readFileSync(file, 'utf8'));
      const [{ runDir }] = JSON.parse(marked.stdout);
      const { phases, durationMs } = JSON.parse(readFileSync(join(runDir, 'run.json'), 'utf8'));
      const m = (name) => marks[`silo:${name}`];
      parts.push({
        nodeBootMs: bootstrapMs,
        cliMs: m('run:action') - bootstrapMs,
        importMs: m('run:imported') - m('run:action'),
        tasksMs: m('run:tasks') - m('run:imported'),
        rolloutMs: m('run:rollout') - m('run:tasks'),
        worldMs: phases.worldMs,
        // From the rollout's start: the sandbox (when the rollout started it), the worker, the agent's import.
        workerStartMs: phases.startupMs,
        agentMs: phases.agentMs,
        gradingAndArtifactsMs: phases.gradingMs,
        rolloutOtherMs: m('run:rollout') - m('run:tasks') - durationMs,
        closeMs: m('run:closed') - m('run:rollout'),
        exitMs: exitAt - m('run:closed'),
        afterExitMs: marked.ms - exitAt,
        sandboxStartAtMs: m('sandbox:start'),
        sandboxReadyAtMs: m('sandbox:ready'),
        sandboxMs: m('sandbox:ready') - m('sandbox:start'),
      });
    }
  } finally {
    if (under === undefined) rmSync(out, { recursive: true, force: true });
  }
  const breakdown = Object.fromEntries(Object.keys(parts[0]).map((k) => [k, round(median(parts.map((p) => p[k])))]));
  const heavy = await benchHeavy(rounds, under);
  return {
    heavy,
    cli: { nodeMs: round(median(samples.node)), versionMs: round(median(samples.version)), ratio: round(median(samples.versionRatio), 2), target: 2, helpMs: round(median(samples.help)), helpRatio: round(median(samples.helpRatio), 2) },
    coldRun: {
      bareMs: round(median(samples.bare)),
      runMs: round(median(samples.run)),
      ratio: round(median(samples.runRatio), 2),
      target: 1.5,
      breakdown,
      // No target yet: tsx's loader thread is most of the difference (docs/performance.md).
      typescriptTaskFile: { javascriptMs: round(median(samples.js)), typescriptMs: round(median(samples.ts)), ratio: round(median(samples.tsRatio), 2) },
    },
  };
}

/** `silo run` of the heavy agent against a bare worker (in a child process) importing the SDK. */
async function benchHeavy(rounds, under) {
  const out = mkdtempSync(join(under ?? tmpdir(), 'silo-bench-heavy-'));
  const sdk = createRequire(join(root, 'package.json')).resolve('@modelcontextprotocol/sdk/client/index.js');
  const args = [BIN, 'run', 'fixtures/bench/tasks.mjs', '-t', 'bench/calls-0', '--agent', 'fixtures/agents/heavy-sdk.ts', '--out', out];
  const bare = [];
  const run = [];
  const ratio = [];
  try {
    // Not counted: the first compiles the agent (once per version of it and its packages).
    await timed(process.execPath, args);
    await timed(process.execPath, ['-e', bareRunScript(sdk, 'Client')]);
    for (let i = 0; i < rounds; i++) {
      const b = await timed(process.execPath, ['-e', bareRunScript(sdk, 'Client')]);
      if (b.code !== 0) throw new Error(`the bare heavy run failed: ${b.stderr}`);
      const r = await timed(process.execPath, args);
      if (r.code !== 0) throw new Error(`the heavy run failed (exit ${r.code}): ${r.stderr}${r.stdout}`);
      bare.push(b.ms);
      run.push(r.ms);
      ratio.push(r.ms / b.ms);
    }
  } finally {
    if (under === undefined) rmSync(out, { recursive: true, force: true });
  }
  return { bareMs: round(median(bare)), runMs: round(median(run)), ratio: round(median(ratio), 2), target: 1 };
}

/** Lines of text for the numbers. */
export function describeCold(r) {
  const b = r.coldRun.breakdown;
  return [
    `cli           node -e 0 ${r.cli.nodeMs} ms · silo --version ${r.cli.versionMs} ms · ratio ${r.cli.ratio} (target ≤ ${r.cli.target}) · silo --help (every command's definition) ${r.cli.helpMs} ms, ${r.cli.helpRatio}`,
    `cold run      bare (a child process whose worker imports the agent) ${r.coldRun.bareMs} ms · silo run ${r.coldRun.runMs} ms · ratio ${r.coldRun.ratio} (target ≤ ${r.coldRun.target})`,
    `              node ${b.nodeBootMs} · CLI ${b.cliMs} · imports ${b.importMs} · task file ${b.tasksMs} · rollout ${b.rolloutMs} (world ${b.worldMs} · worker start ${b.workerStartMs} · agent ${b.agentMs} · grading and artifacts ${b.gradingAndArtifactsMs} · other ${b.rolloutOtherMs}) · pool closed ${b.closeMs} · to exit ${b.exitMs} + ${b.afterExitMs} ms`,
    `              sandbox started at ${b.sandboxStartAtMs} ms, ready at ${b.sandboxReadyAtMs} ms (${b.sandboxMs} ms)`,
    ...(r.coldRun.typescriptTaskFile
      ? [`              a task file that imports 'silo': in JavaScript ${r.coldRun.typescriptTaskFile.javascriptMs} ms · in TypeScript (compiled, kept) ${r.coldRun.typescriptTaskFile.typescriptMs} ms · ratio ${r.coldRun.typescriptTaskFile.ratio}`]
      : []),
    `heavy agent   bare (a child process whose worker imports the MCP SDK's client) ${r.heavy.bareMs} ms · silo run of a TypeScript agent importing it ${r.heavy.runMs} ms · ratio ${r.heavy.ratio} (target ≤ ${r.heavy.target})`,
  ].join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const r = await benchCold();
  console.log(process.argv.includes('--json') ? JSON.stringify(r, null, 2) : describeCold(r));
}
