/**
 * Workers start a few at a time per runner (src/pool/start-gate.ts): hundreds of rollouts that
 * start their workers at once would have every start compete for the cores with the thread that
 * relays their messages (in the sandbox: the rollouts timed out as they started, and the silence
 * check ended the sandbox). The gate (a Limiter per runner) admits START_SLOTS starts at once, in
 * order; a rollout's start clock runs from its turn; one cancelled while it waits takes nothing.
 */
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { AgentPool, type AgentRunner } from '../../src/pool/pool.js';
import { START_SLOTS, startGate } from '../../src/pool/start-gate.js';
import { runRollout } from '../../src/index.js';
import type { Task } from '../../src/types.js';
import { tempDir } from '../helpers.js';

const home = tempDir('silo-start-gate-');
afterAll(() => home.remove());

describe('startGate', () => {
  it('is one gate per runner, of START_SLOTS turns, freed once however often a turn is given back', async () => {
    const runner = {};
    const gate = startGate(runner);
    expect(startGate(runner)).toBe(gate);
    expect(startGate({})).not.toBe(gate);
    const held = await Promise.all(Array.from({ length: START_SLOTS }, () => gate.acquire()));
    let next = false;
    const waiting = gate.acquire().then((release) => ((next = true), release));
    await new Promise((r) => setTimeout(r, 10));
    expect(next).toBe(false);
    expect(gate.waiting).toBe(1);
    held[0]!();
    held[0]!(); // twice frees one turn only
    (await waiting)();
    expect(gate.inFlight).toBe(START_SLOTS - 1);
    for (const release of held.slice(1)) release();
    expect(gate.inFlight).toBe(0);
  });

  it('drops one whose signal aborts while it waits (agent.ts takes that as no turn)', async () => {
    const gate = startGate({});
    const held = await Promise.all(Array.from({ length: START_SLOTS }, () => gate.acquire()));
    const controller = new AbortController();
    const gone = gate.acquire(controller.signal).catch(() => null);
    controller.abort();
    expect(await gone).toBeNull();
    expect(gate.waiting).toBe(0);
    for (const release of held) release();
    expect(await gate.acquire(AbortSignal.abort()).catch(() => null)).toBeNull();
  });
});

describe('rollouts starting at once', () => {
  it(`start at most ${START_SLOTS} workers at a time on one runner, and all run`, async () => {
    // A runner whose workers take 150 ms to be asked for: how many are being started at once.
    const inner = new AgentPool({ maxThreads: 64 });
    let starting = 0;
    let most = 0;
    const runner: AgentRunner = {
      inProcess: true,
      link: () => inner.link(),
      run: async (...args) => {
        starting++;
        most = Math.max(most, starting);
        await new Promise((r) => setTimeout(r, 150));
        starting--;
        return inner.run(...args);
      },
      destroy: () => inner.destroy(),
    };
    const task: Task = {
      id: 'gate/answer',
      instruction: 'answer',
      environment: { name: 'empty', createState: () => ({}), tools: [] },
      verify: ({ output }) => [{ name: 'answered', pass: output === 'waited' }],
    };
    const agent = join(import.meta.dirname, '..', '..', 'fixtures', 'agents', 'bench-waiter.mjs');
    try {
      const runs = await Promise.all(Array.from({ length: 3 * START_SLOTS }, () => runRollout({ task, agent, pool: runner, outDir: join(home.dir, 'out') })));
      expect(runs.map((r) => r.status)).toEqual(runs.map(() => 'passed'));
      expect(most).toBeLessThanOrEqual(START_SLOTS);
      expect(most).toBeGreaterThan(1);
    } finally {
      await runner.destroy();
    }
  });
});
