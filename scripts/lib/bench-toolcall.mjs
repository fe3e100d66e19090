// One tool call, Silo against the same hops without Silo, measured in turns (A B A B ...) in the
// same run; medians of the rounds. Meant to run pinned to one CPU (`taskset -c 0`), so that the
// host's own work per call shows instead of hiding on the second core: `npm run bench` runs it so
// when taskset exists (the host, the sandbox process and every worker inherit the pinning).
//   thread   a worker posts a call's JSON text on a MessagePort to the host, which parses it and
//            posts the result back (structured clone): the bare round trip; against Silo's
//            callTool with the agent in a thread (`--isolation thread`)
//   sandbox  the same through a child process: a worker posts the text to the child's main
//            thread, which writes it to the host on a socket (length-prefixed frames), the host
//            answers a JSON frame the same way, the child parses it and posts it to the worker;
//            against Silo's callTool through the sandbox (the default isolation)
// Both bare baselines send exactly Silo's messages (the call text the worker sends, the result
// object the host answers). Silo's figure is the host's own clock: the time between the trace's
// tool_call events past the first WARMUP calls of a 1000-call rollout, so the worker's start and the
// agent's loading are not in it (the bare loops skip their first WARMUP round trips alike).
// `taskset -c 0 node scripts/lib/bench-toolcall.mjs` runs it alone (`--json` for machines;
// `--rounds N`, `--only thread|sandbox`).
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { MessageChannel, Worker } from 'node:worker_threads';
import { loadTasks, runRollout } from '../../dist/src/index.js';
import { AgentPool } from '../../dist/src/pool/pool.js';
import { SandboxPool } from '../../dist/src/sandbox/pool.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const round = (x, digits = 1) => Number(x.toFixed(digits));

/** Calls per sample (the bench task's), and those of each sample not counted. */
const CALLS = 1000;
const WARMUP = 200;

// Silo's messages, as its worker and its host send them (src/pool/worker-runtime.ts, channel.ts).
const BRAND = 'silo/1';
const callText = `(id) => JSON.stringify({ brand: '${BRAND}', type: 'call', id, name: 'noop', input: { n: id }, inputBytes: String(id).length + 6 })`;
const answer = (call) => ({ brand: BRAND, type: 'result', id: call.id, result: { ok: true, value: call.input.n } });

/** A worker that makes `calls` sequential calls on the port it is given; its code. */
const callerWorker = (calls) => `
  const { parentPort } = require('node:worker_threads');
  const callText = ${callText};
  parentPort.once('message', async ({ port }) => {
    const pending = new Map();
    port.on('message', (m) => { const r = pending.get(m.id); pending.delete(m.id); r(m.result); });
    for (let id = 1; id <= ${calls}; id++) await new Promise((resolve) => { pending.set(id, resolve); port.postMessage(callText(id)); });
    port.close();
  });`;

/** µs per call between call WARMUP and the last, on the host's clock. */
const period = (times) => ((times[times.length - 1] - times[WARMUP]) / (times.length - 1 - WARMUP)) * 1000;

/** The bare round trip in threads: µs per call. */
export async function bareThread() {
  const worker = new Worker(callerWorker(CALLS), { eval: true });
  const { port1, port2 } = new MessageChannel();
  const times = [];
  const done = new Promise((resolve) => {
    port1.on('message', (text) => {
      times.push(performance.now());
      port1.postMessage(answer(JSON.parse(text)));
      if (times.length === CALLS) resolve();
    });
  });
  worker.postMessage({ port: port2 }, [port2]);
  await done;
  port1.close();
  await worker.terminate();
  return period(times);
}

/** The bare round trip through a child process's main thread and a socket: µs per call. */
export async function bareProcess() {
  const child = `
    const { Socket } = require('node:net');
    const { Worker, MessageChannel } = require('node:worker_threads');
    const socket = new Socket({ fd: 3, readable: true, writable: true });
    const { port1, port2 } = new MessageChannel();
    const worker = new Worker(${JSON.stringify(callerWorker(CALLS))}, { eval: true });
    worker.postMessage({ port: port2 }, [port2]);
    const frame = (text) => { const b = Buffer.allocUnsafe(4 + Buffer.byteLength(text)); b.writeUInt32BE(b.length - 4, 0); b.write(text, 4); return b; };
    port1.on('message', (text) => socket.write(frame(text)));
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      buffered = buffered.length ? Buffer.concat([buffered, chunk]) : chunk;
      while (buffered.length >= 4 && buffered.length >= 4 + buffered.readUInt32BE(0)) {
        const size = buffered.readUInt32BE(0);
        port1.postMessage(JSON.parse(buffered.toString('utf8', 4, 4 + size)));
        buffered = buffered.subarray(4 + size);
      }
    });
    socket.on('close', () => process.exit(0));`;
  const proc = spawn(process.execPath, ['-e', child], { stdio: ['ignore', 'inherit', 'inherit', 'pipe'], env: {} });
  const socket = proc.stdio[3];
  const frame = (text) => {
    const b = Buffer.allocUnsafe(4 + Buffer.byteLength(text));
    b.writeUInt32BE(b.length - 4, 0);
    b.write(text, 4);
    return b;
  };
  const times = [];
  await new Promise((resolve) => {
    let buffered = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      buffered = buffered.length ? Buffer.concat([buffered, chunk]) : chunk;
      while (buffered.length >= 4 && buffered.length >= 4 + buffered.readUInt32BE(0)) {
        const size = buffered.readUInt32BE(0);
        const call = JSON.parse(buffered.toString('utf8', 4, 4 + size));
        buffered = buffered.subarray(4 + size);
        times.push(performance.now());
        socket.write(frame(JSON.stringify(answer(call))));
        if (times.length === CALLS) resolve();
      }
    });
  });
  socket.destroy();
  await new Promise((resolve) => proc.once('exit', resolve));
  return period(times);
}

/** Silo's callTool, 1000 calls in one rollout on `pool`: µs per call, from the trace's clock. */
async function silo(pool, task, out) {
  // Past 500 calls (maxToolCalls) the agent's calls are refused; a grace period long enough for
  // it to make them all and return, even on a loaded machine.
  const r = await runRollout({ task, agent: join(root, 'fixtures/agents/bench-caller.mjs'), outDir: out, pool, seed: 1, limits: { graceMs: 30_000 } });
  if (r.status !== 'passed') throw new Error(`bench rollout failed: ${JSON.stringify(r)}`);
  const times = readFileSync(join(r.runDir, 'trace.jsonl'), 'utf8')
    .split('\n')
    .filter((line) => line.includes('"type":"tool_call"'))
    .map((line) => JSON.parse(line).t);
  if (times.length !== CALLS) throw new Error(`bench rollout recorded ${times.length} calls`);
  return period(times);
}

/**
 * A pause before each measured round: a rollout's worker, once it has exited, is replaced in the
 * background, and a thread booting on the same CPU would slow whichever round runs beside it.
 */
const settle = () => new Promise((resolve) => setTimeout(resolve, 300));

/**
 * Rounds of each row run first and not counted. The first rounds of a process are slower for both
 * sides, and for Silo more (seen here: a round's µs per call falling from ~2-4× its settled value
 * over its first ~5 rounds, the bare hops' too, also when the process first sat idle for 6 s): the
 * rows are about the thousands of calls of an eval, so they are measured once that has settled.
 */
const WARMUP_ROUNDS = 5;

/**
 * Measures both rows, `rounds` turns of each after WARMUP_ROUNDS turns not counted. `out`: a folder
 * to write the runs under, left for the caller to remove (without it, a temporary folder removed at
 * the end).
 */
export async function benchToolCall({ rounds = 7, only, out: under } = {}) {
  const out = mkdtempSync(join(under ?? tmpdir(), 'silo-bench-toolcall-'));
  const task = (await loadTasks([join(root, 'fixtures/bench/tasks.mjs')])).find((t) => t.task.id === `bench/calls-${CALLS}`).task;
  const result = {};
  try {
    if (only !== 'sandbox') {
      const pool = new AgentPool({ maxThreads: 2 });
      const bare = [];
      const mine = [];
      for (let i = 0; i < WARMUP_ROUNDS + rounds; i++) {
        await settle();
        const b = await bareThread();
        await settle();
        const s = await silo(pool, task, out);
        if (i < WARMUP_ROUNDS) continue;
        bare.push(b);
        mine.push(s);
      }
      await pool.destroy();
      result.thread = { bareUs: round(median(bare)), siloUs: round(median(mine)), ratio: round(median(mine) / median(bare), 2) };
    }
    if (only !== 'thread') {
      const pool = new SandboxPool({ maxThreads: 2, warn: () => {} });
      const bare = [];
      const mine = [];
      for (let i = 0; i < WARMUP_ROUNDS + rounds; i++) {
        await settle();
        const b = await bareProcess();
        await settle();
        const s = await silo(pool, task, out);
        if (i < WARMUP_ROUNDS) continue;
        bare.push(b);
        mine.push(s);
      }
      result.sandbox = { level: pool.level, bareUs: round(median(bare)), siloUs: round(median(mine)), ratio: round(median(mine) / median(bare), 2) };
      await pool.destroy();
    }
  } finally {
    if (under === undefined) rmSync(out, { recursive: true, force: true });
  }
  return result;
}

/** The CPUs this process may run on (Linux), e.g. "0" when pinned with taskset -c 0. */
export function allowedCpus() {
  try {
    return /^Cpus_allowed_list:\s*(.+)$/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]?.trim() ?? 'unknown';
  } catch {
    return 'unknown';
  }
}

/** Lines of text for the numbers. */
export function describeToolCall(r) {
  const lines = [];
  const cpus = r.cpus === undefined ? '' : ` · on CPU ${r.cpus}${r.pinned ? ' (taskset -c 0: host, sandbox and workers on one CPU)' : ' (not pinned: taskset not found)'}`;
  if (r.thread) lines.push(`tool call     in a thread: bare worker→host round trip ${r.thread.bareUs} µs · Silo callTool ${r.thread.siloUs} µs · ratio ${r.thread.ratio} (target ≤ 1.5)${cpus}`);
  if (r.sandbox) lines.push(`              through the sandbox (${r.sandbox.level}): the same hops without Silo ${r.sandbox.bareUs} µs · Silo callTool ${r.sandbox.siloUs} µs · ratio ${r.sandbox.ratio} (target ≤ 1.5)`);
  return lines.join('\n');
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const arg = (name) => {
    const i = process.argv.indexOf(name);
    return i < 0 ? undefined : process.argv[i + 1];
  };
  const cpus = allowedCpus();
  const r = { cpus, pinned: cpus === '0', ...(await benchToolCall({ rounds: Number(arg('--rounds') ?? 7), only: arg('--only'), out: arg('--out') })) };
  console.log(process.argv.includes('--json') ? JSON.stringify(r) : describeToolCall(r));
}
