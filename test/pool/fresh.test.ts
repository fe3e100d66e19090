/**
 * Single-use threads (src/pool/fresh.ts), on a small script of their own instead of Silo's worker
 * runtime: it takes one task from its parent port, says on the task's port which thread it is,
 * then does what the task says (exit, wait for word, fill its heap, or exit while busy).
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { afterAll, describe, expect, it } from 'vitest';
import { runRollout } from '../../src/index.js';
import { FreshWorkers, type FreshWorkersOptions } from '../../src/pool/fresh.js';
import { AgentPool } from '../../src/pool/pool.js';
import { parentPortMessagesDuring, tempDir, testWorld } from '../helpers.js';

const home = tempDir('silo-fresh-');
afterAll(() => home.remove());

const script = join(home.dir, 'task.cjs');
writeFileSync(
  script,
  `const { parentPort, threadId } = require('node:worker_threads');
parentPort.once('message', ({ port, then }) => {
  port.postMessage(threadId);
  if (then === 'exit') process.exit(0);
  if (then === 'fail') process.exit(3);
  if (then === 'grow') { const keep = []; for (;;) keep.push(new Array(1e5).fill(keep.length)); }
  port.on('message', () => process.exit(0));
});
`,
);

const pools: FreshWorkers[] = [];
afterAll(() => Promise.all(pools.map((p) => p.destroy())));
function make(options: Partial<FreshWorkersOptions> = {}): FreshWorkers {
  const pool = new FreshWorkers({ filename: script, spares: 1, max: 4, env: {}, execArgv: [], memoryMb: 64, ...options });
  pools.push(pool);
  return pool;
}

/** Runs a task; `thread` settles with the id its thread reports. */
function task(pool: FreshWorkers, then: string, signal = new AbortController().signal) {
  const { port1, port2 } = new MessageChannel();
  const thread = new Promise<number>((resolve) => port1.once('message', resolve));
  const exit = pool.run({ port: port2, then }, port2, signal);
  return { exit, thread, host: port1 as MessagePort };
}

describe('FreshWorkers', () => {
  it('runs each task on a thread no other task has used, and ends it when the thread exits', async () => {
    const pool = make({ spares: 2 });
    pool.warm();
    const ids = new Set<number>();
    for (let i = 0; i < 4; i++) {
      const t = task(pool, 'exit');
      ids.add(await t.thread);
      expect(await t.exit).toEqual({ kind: 'exited', message: 'the worker finished its task' });
      t.host.close();
    }
    expect(ids.size).toBe(4);
  });

  it('says how a thread ended: its exit code, its heap limit, a terminate on the signal', async () => {
    const pool = make({ spares: 0, memoryMb: 8 });
    const failed = task(pool, 'fail');
    expect(await failed.exit).toEqual({ kind: 'exited', message: 'the worker exited with code 3' });
    const grew = task(pool, 'grow');
    expect((await grew.exit).kind).toBe('out_of_memory');
    const stop = new AbortController();
    const waiting = task(pool, 'wait', stop.signal);
    await waiting.thread;
    stop.abort();
    expect(await waiting.exit).toEqual({ kind: 'terminated', message: 'the worker was terminated' });
    for (const t of [failed, grew, waiting]) t.host.close();
  }, 30_000);

  it('keeps at most `max` threads alive; a task past it waits for one to exit, or for its signal', async () => {
    const pool = make({ spares: 0, max: 2 });
    const running = [task(pool, 'wait'), task(pool, 'wait')];
    await Promise.all(running.map((t) => t.thread));
    let third = false;
    const queued = task(pool, 'exit');
    void queued.thread.then(() => (third = true));
    const stop = new AbortController();
    const dropped = task(pool, 'exit', stop.signal);
    await new Promise((r) => setTimeout(r, 200));
    expect(third).toBe(false);
    stop.abort();
    expect(await dropped.exit).toEqual({ kind: 'terminated', message: 'the task was aborted while it waited for a thread' });
    running[0]!.host.postMessage('go');
    await queued.thread;
    expect(await queued.exit).toMatchObject({ kind: 'exited' });
    running[1]!.host.postMessage('go');
    await running[1]!.exit;
    for (const t of [...running, queued, dropped]) t.host.close();
  }, 30_000);

  it('ends the thread of a task it cannot post, and the next task gets a thread', async () => {
    const pool = make({ spares: 0, max: 1 });
    const { port1, port2 } = new MessageChannel();
    const exit = await pool.run({ port: port2, then: () => 'not cloneable' }, port2, new AbortController().signal);
    expect(exit.kind).toBe('exited');
    expect(exit.message).toMatch(/^the task could not be posted to its worker: /);
    port1.close();
    const next = task(pool, 'exit');
    expect(await next.exit).toMatchObject({ kind: 'exited' });
    next.host.close();
  });

  it('ends running threads and waiting tasks when destroyed', async () => {
    const pool = make({ spares: 1, max: 1 });
    const running = task(pool, 'wait');
    await running.thread;
    const waiting = task(pool, 'exit');
    await pool.destroy();
    expect(await running.exit).toEqual({ kind: 'terminated', message: 'the worker was terminated' });
    expect(await waiting.exit).toEqual({ kind: 'terminated', message: 'the worker pool was closed' });
    running.host.close();
    waiting.host.close();
  });

  it('does not keep the process alive with spares alone', () => {
    const code = `import { FreshWorkers } from ${JSON.stringify(new URL('../../dist/src/pool/fresh.js', import.meta.url).href)};
new FreshWorkers({ filename: ${JSON.stringify(script)}, spares: 2, max: 2, env: {}, execArgv: [], memoryMb: 64 }).warm();`;
    const child = spawnSync(process.execPath, ['--input-type=module', '-e', code], { timeout: 20_000, encoding: 'utf8' });
    expect(child.error).toBeUndefined();
    expect(child.status).toBe(0);
  });
});

describe("an agent posting on its worker's parent port", () => {
  it('reaches nothing: the port is closed once the worker has its task', async () => {
    const pool = new AgentPool({ maxThreads: 1, minThreads: 0 });
    try {
      const received = await parentPortMessagesDuring(async () => {
        const agent = fileURLToPath(new URL('../../fixtures/agents/hostile/posts-parent-port.mjs', import.meta.url));
        const result = await runRollout({ task: testWorld().task, agent, agentOptions: { count: 20, chars: 1_000_000 }, outDir: home.dir, pool });
        expect(result.termination).toBe('returned');
        expect(JSON.parse(String(result.output))).toEqual({ posted: 40, failed: 0 });
      });
      expect(received).toBe(0);
    } finally {
      await pool.destroy();
    }
  }, 30_000);
});
