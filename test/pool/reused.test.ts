/**
 * Reused threads (src/pool/reused.ts), on a small script of their own instead of Silo's worker
 * runtime: it takes its own port from its parent port, then tasks on that port; each task says
 * (tagged with its id, on that same port) which thread runs it, then does what it says (end, wait
 * for word, echo what the host sends, send a burst of messages and end, exit the thread, fill the
 * heap, or never end). And, through an AgentPool with Silo's runtime, an agent posting on its
 * reused worker's parent port reaches nothing.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { runRollout } from '../../src/index.js';
import { AgentPool } from '../../src/pool/pool.js';
import { RelayLink } from '../../src/pool/ends.js';
import { ReusedWorkers, type ReusedTask, type ReusedWorkersOptions } from '../../src/pool/reused.js';
import { BRAND } from '../../src/protocol.js';
import { parentPortMessagesDuring, tempDir, testWorld } from '../helpers.js';

const home = tempDir('silo-reused-');
afterAll(() => home.remove());

const script = join(home.dir, 'tasks.cjs');
writeFileSync(
  script,
  `const { parentPort, threadId } = require('node:worker_threads');
parentPort.once('message', ({ port: own }) => {
  parentPort.close();
  const fromHost = new Map();
  own.on('message', ({ id, task, to }) => {
    if (task === undefined) return fromHost.get(id)?.(to);
    const { then } = task;
    const end = () => own.postMessage({ brand: ${JSON.stringify(BRAND)}, id });
    const say = (m) => own.postMessage({ id, m });
    say(threadId);
    if (then === 'end') end();
    if (then === 'wait') fromHost.set(id, end);
    if (then === 'echo') fromHost.set(id, (m) => (m === 'stop' ? end() : say(['echo', m])));
    if (then === 'burst') { for (let i = 0; i < 100; i++) say(i); end(); }
    if (then === 'fail') own.postMessage({ brand: ${JSON.stringify(BRAND)}, id, error: 'the runtime broke' });
    if (then === 'exit') process.exit(0);
    if (then === 'grow') { const keep = []; for (;;) keep.push(new Array(1e5).fill(keep.length)); }
    // 'hang': never ends
  });
});
`,
);

const pools: ReusedWorkers[] = [];
afterAll(() => Promise.all(pools.map((p) => p.destroy())));
function make(options: Partial<ReusedWorkersOptions> = {}): ReusedWorkers {
  const pool = new ReusedWorkers({ filename: script, threads: 1, max: 1, perThread: 2, env: {}, execArgv: [], memoryMb: 64, ...options });
  pools.push(pool);
  return pool;
}

/**
 * Runs a task; `thread` settles with the id of the thread that runs it, `said` holds what the task
 * sent after that, `closedAt` how many messages had come when its link closed; `host.post` sends
 * it a message (and releases a waiting one).
 */
function task(pool: ReusedWorkers, then: string, signal = new AbortController().signal) {
  const link = new RelayLink();
  const said: unknown[] = [];
  let resolveThread: (id: number) => void = () => {};
  const thread = new Promise<number>((resolve) => (resolveThread = resolve));
  let first = true;
  link.onMessage((m) => {
    if (first) resolveThread(m as number);
    else said.push(m);
    first = false;
  });
  let closedAt: number | null = null;
  link.onClose(() => (closedAt = said.length));
  let settled = false;
  const exit = pool.run({ then } as unknown as ReusedTask, link, signal).then((e) => ((settled = true), e));
  return { exit, thread, said, host: { post: (m: unknown) => link.post(m as never) }, settled: () => settled, closedAt: () => closedAt };
}

const FINISHED = { kind: 'exited', message: 'the worker finished its task' };
const tick = (ms = 100): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('ReusedWorkers', () => {
  it('spreads tasks over the threads it starts, several at once in each, and makes a task past them wait for room', async () => {
    const pool = make({ threads: 2, max: 2, perThread: 3 });
    const tasks = Array.from({ length: 6 }, () => task(pool, 'wait'));
    const threads = await Promise.all(tasks.map((t) => t.thread));
    expect(new Set(threads).size).toBe(2);
    for (const id of new Set(threads)) expect(threads.filter((t) => t === id)).toHaveLength(3);
    const late = task(pool, 'end');
    await tick();
    expect(late.settled()).toBe(false);
    tasks[0]!.host.post('go');
    expect(await tasks[0]!.exit).toEqual(FINISHED);
    // The room freed is in the thread that ran it: the late task runs there.
    expect(await late.thread).toBe(threads[0]);
    expect(await late.exit).toEqual(FINISHED);
    for (const t of tasks.slice(1)) t.host.post('go');
    expect(await Promise.all(tasks.slice(1).map((t) => t.exit))).toEqual(Array(5).fill(FINISHED));
  });

  it("carries each task's messages on the thread's own port: in order, to its own link, closed after the last", async () => {
    const pool = make({ perThread: 3 });
    const [a, b] = [task(pool, 'echo'), task(pool, 'echo')];
    const burst = task(pool, 'burst');
    // One thread runs all three (perThread 3, max 1): what each says reaches its own link only.
    expect(new Set(await Promise.all([a.thread, b.thread, burst.thread])).size).toBe(1);
    for (let i = 0; i < 20; i++) {
      a.host.post(`a${i}`);
      b.host.post(`b${i}`);
    }
    a.host.post('stop');
    b.host.post('stop');
    expect(await Promise.all([a.exit, b.exit, burst.exit])).toEqual([FINISHED, FINISHED, FINISHED]);
    expect(a.said).toEqual(Array.from({ length: 20 }, (_, i) => ['echo', `a${i}`]));
    expect(b.said).toEqual(Array.from({ length: 20 }, (_, i) => ['echo', `b${i}`]));
    // A task's end comes after its messages on the one port: its link closed with all of them in.
    expect(burst.said).toEqual(Array.from({ length: 100 }, (_, i) => i));
    expect([a.closedAt(), b.closedAt(), burst.closedAt()]).toEqual([20, 20, 100]);
  });

  it('holds what the host sends a task that waits for room, and hands it over once the task has a thread', async () => {
    const pool = make({ perThread: 1 });
    const first = task(pool, 'wait');
    await first.thread;
    const late = task(pool, 'echo');
    late.host.post('early');
    await tick();
    expect(late.settled()).toBe(false);
    first.host.post('go');
    await late.thread;
    late.host.post('stop');
    expect(await late.exit).toEqual(FINISHED);
    expect(late.said).toEqual([['echo', 'early']]);
  });

  it('says when the runtime could not run a task to its end', async () => {
    const pool = make();
    expect(await task(pool, 'fail').exit).toEqual({ kind: 'exited', message: 'the runtime broke' });
  });

  it('ends the tasks of a thread that exits, and runs the next task on a new thread', async () => {
    const pool = make();
    const waiting = task(pool, 'wait');
    const exiting = task(pool, 'exit');
    const first = await waiting.thread;
    expect(await exiting.exit).toEqual({ kind: 'exited', message: 'its thread exited (code 0) while the task ran' });
    expect(await waiting.exit).toEqual({ kind: 'exited', message: 'its thread exited (code 0) while the task ran' });
    // Their links closed with their thread.
    expect([waiting.closedAt(), exiting.closedAt()]).toEqual([0, 0]);
    const next = task(pool, 'end');
    expect(await next.thread).not.toBe(first);
    expect(await next.exit).toEqual(FINISHED);
  });

  it('terminates the thread of an aborted task: it ends terminated, the other in the thread says why', async () => {
    const pool = make();
    const stop = new AbortController();
    const hanging = task(pool, 'hang', stop.signal);
    const other = task(pool, 'wait');
    await Promise.all([hanging.thread, other.thread]);
    stop.abort();
    expect(await hanging.exit).toEqual({ kind: 'terminated', message: 'the worker was terminated' });
    expect(await other.exit).toEqual({ kind: 'exited', message: 'its thread was terminated: another rollout running in it ignored its signal' });
    expect(await task(pool, 'end').exit).toEqual(FINISHED);
  });

  it('ends the tasks of a thread out of memory as out_of_memory', async () => {
    const pool = make({ memoryMb: 16 });
    const growing = task(pool, 'grow');
    const other = task(pool, 'wait');
    expect((await growing.exit).kind).toBe('out_of_memory');
    expect((await other.exit).kind).toBe('out_of_memory');
  }, 30_000);

  it('ends the running and the waiting tasks when destroyed', async () => {
    const pool = make({ perThread: 1 });
    const running = task(pool, 'hang');
    await running.thread;
    const waiting = task(pool, 'end');
    await pool.destroy();
    const closed = { kind: 'terminated', message: 'the worker pool was closed' };
    expect(await running.exit).toEqual(closed);
    expect(await waiting.exit).toEqual(closed);
  });
});

describe("an agent posting on its reused worker's parent port", () => {
  it('reaches nothing: the worker closes it once it has its own port', async () => {
    const pool = new AgentPool({ maxThreads: 2, reuse: true });
    try {
      const received = await parentPortMessagesDuring(async () => {
        const agent = fileURLToPath(new URL('../../fixtures/agents/hostile/posts-parent-port.mjs', import.meta.url));
        const results = await Promise.all(
          [1, 2].map(() => runRollout({ task: testWorld().task, agent, agentOptions: { count: 20, chars: 1_000_000 }, outDir: home.dir, pool })),
        );
        for (const result of results) {
          expect(result.termination).toBe('returned');
          expect(JSON.parse(String(result.output))).toEqual({ posted: 40, failed: 0 });
        }
      });
      expect(received).toBe(0);
    } finally {
      await pool.destroy();
    }
  }, 30_000);
});
