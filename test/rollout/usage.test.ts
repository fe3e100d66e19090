import { afterAll, describe, expect, it } from 'vitest';
import { runRollout } from '../../src/index.js';
import { USAGE_MAX_PER_REPORT, USAGE_MAX_TOTAL } from '../../src/options.js';
import { UsageTally } from '../../src/rollout/usage.js';
import { eventsOf, readRunFiles, tempDir, testWorld } from '../helpers.js';

const out = tempDir('silo-usage-');
afterAll(() => out.remove());

describe('UsageTally', () => {
  it('adds up reports of non-negative integers', () => {
    const tally = new UsageTally();
    expect(tally.total).toBeUndefined();
    expect(tally.add({ inputTokens: 10, outputTokens: 2, requests: 1 })).toBeNull();
    expect(tally.add({ inputTokens: 0, outputTokens: 5, requests: 3 })).toBeNull();
    expect(tally.total).toEqual({ inputTokens: 10, outputTokens: 7, requests: 4 });
  });

  it.each([
    [{ inputTokens: -1, outputTokens: 0, requests: 1 }, /inputTokens is not an integer from 0/],
    [{ inputTokens: 1, outputTokens: 0.5, requests: 1 }, /outputTokens/],
    [{ inputTokens: USAGE_MAX_PER_REPORT + 1, outputTokens: 0, requests: 1 }, /inputTokens/],
    [{ inputTokens: '3', outputTokens: 0, requests: 1 }, /inputTokens .*got "3"/],
    [{ inputTokens: 1, outputTokens: 1 }, /requests .*got undefined/],
    [{ inputTokens: Number.NaN, outputTokens: 1, requests: 1 }, /inputTokens/],
  ])('refuses %j whole, saying why', (report, why) => {
    const tally = new UsageTally();
    expect(tally.add(report)).toMatch(why);
    expect(tally.total).toBeUndefined();
  });

  it('stops totals at USAGE_MAX_TOTAL', () => {
    const tally = new UsageTally();
    const big = { inputTokens: USAGE_MAX_PER_REPORT, outputTokens: 1, requests: 1 };
    const reports = USAGE_MAX_TOTAL / USAGE_MAX_PER_REPORT + 5;
    for (let i = 0; i < reports; i++) expect(tally.add(big)).toBeNull();
    expect(tally.total).toEqual({ inputTokens: USAGE_MAX_TOTAL, outputTokens: reports, requests: reports });
  });
});

describe('usage reported by an agent', () => {
  it('reaches run.json reportedUsage only from honest reports, never usage; forged ones are dropped with a note each', async () => {
    const world = testWorld();
    const r = await runRollout({ task: world.task, agent: 'fixtures/agents/hostile/forges-usage.ts', outDir: out.dir });
    expect(r.output).toBe('done');
    const files = readRunFiles(r.runDir);
    expect(files.run.reportedUsage).toEqual({ inputTokens: 13, outputTokens: 6, requests: 3 });
    // usage is what the gateway measures; an agent's word never becomes it.
    expect(files.run).not.toHaveProperty('usage');
    const notes = eventsOf(files.trace, 'agent_log').filter((e) => e.message.startsWith('silo: dropped a usage report'));
    expect(notes).toHaveLength(6);
  });

  it('leaves usage and reportedUsage out of run.json when the agent reports none and has no provider', async () => {
    const world = testWorld();
    const r = await runRollout({ task: world.task, agent: 'fixtures/agents/call-once.mjs', outDir: out.dir });
    expect(readRunFiles(r.runDir).run).not.toHaveProperty('usage');
    expect(readRunFiles(r.runDir).run).not.toHaveProperty('reportedUsage');
  });
});
