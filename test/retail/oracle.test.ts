/**
 * End to end on the retail world, through real rollouts (workers run the built code: `npm run build`
 * first): the oracle passes a sample of tasks (writes, a gold action that fails on purpose, a read-only
 * question with an expected output), and the do-nothing agent fails tasks that need something done,
 * with checks that say what is missing.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { loadTasks, runRollout, type Task } from '../../src/index.js';
import { tempDir } from '../helpers.js';

const out = tempDir('silo-retail-');
afterAll(() => out.remove());

const loaded = await loadTasks(['fixtures/retail/tasks.ts']);
const byId = (id: string): Task => {
  const found = loaded.find((t) => t.task.id === id);
  if (!found) throw new Error(`no task ${id}`);
  return found.task;
};

describe('retail rollouts', () => {
  it('loads all 635 tasks, tagged with their split', () => {
    expect(loaded).toHaveLength(635);
    const splits = loaded.map((t) => t.task.tags?.[0]);
    expect([splits.filter((s) => s === 'train').length, splits.filter((s) => s === 'dev').length, splits.filter((s) => s === 'test').length]).toEqual([
      500, 20, 115,
    ]);
  });

  // train/0: a return; train/24: a payment change that fails (short gift card), then an item change;
  // dev/0; test/16: reads, calculate, cancels and a return, answered with "8276.23"; test/64: an exchange that fails
  // (the order is pending), then an item change.
  it.each(['retail/train/0', 'retail/train/24', 'retail/dev/0', 'retail/test/16', 'retail/test/64'])(
    'the oracle passes %s',
    async (id) => {
      const r = await runRollout({ task: byId(id), agent: 'fixtures/retail/gold/oracle.ts', outDir: out.dir, seed: 1 });
      expect(r.status, JSON.stringify(r.checks.filter((c) => !c.pass))).toBe('passed');
      expect(r.toolCalls).toBe(byId(id).solution?.calls.length);
    },
  );

  it('the do-nothing agent fails a task that needs a write, and the check names the path', async () => {
    const r = await runRollout({ task: byId('retail/train/0'), agent: 'fixtures/agents/do-nothing.ts', outDir: out.dir, seed: 1 });
    expect(r.status).toBe('failed');
    const world = r.checks.find((c) => c.name.startsWith('world'));
    expect(world?.pass).toBe(false);
    expect(world?.message).toMatch(/orders\.#W6067464\.status \(expected "return requested", got "delivered"\)/);
  });

  it('the do-nothing agent fails a read-only question: the world is right, the answer lacks the expected outputs', async () => {
    const r = await runRollout({ task: byId('retail/test/62'), agent: 'fixtures/agents/do-nothing.ts', outDir: out.dir, seed: 1 });
    expect(r.status).toBe('failed');
    expect(r.checks.map((c) => [c.name, c.pass])).toEqual([
      ['world equals the world after the gold actions', true],
      ['answer contains "302.67"', false],
      ['answer contains "20 hours"', false],
    ]);
  });
});
