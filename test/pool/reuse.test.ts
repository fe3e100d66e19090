/** How many agents a reused worker runs at once. */
import { describe, expect, it } from 'vitest';
import { agentsPerReusedWorker, MAX_AGENTS_PER_REUSED_WORKER } from '../../src/pool/pool.js';

describe('agentsPerReusedWorker', () => {
  it('spreads the rollouts over the cores, a thread per core at least', () => {
    expect(agentsPerReusedWorker(16, 2)).toBe(8);
    expect(agentsPerReusedWorker(256, 16)).toBe(16);
    expect(agentsPerReusedWorker(3, 2)).toBe(2);
  });

  it('puts at most 64 agents in a thread, and at least one', () => {
    expect(agentsPerReusedWorker(256, 2)).toBe(MAX_AGENTS_PER_REUSED_WORKER);
    expect(agentsPerReusedWorker(10_000, 2)).toBe(64);
    expect(agentsPerReusedWorker(1, 8)).toBe(1);
    expect(agentsPerReusedWorker(0, 2)).toBe(1);
    expect(agentsPerReusedWorker(5, 0)).toBe(5);
  });
});
