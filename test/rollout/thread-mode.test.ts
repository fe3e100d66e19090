/**
 * `--isolation thread`: agents run in threads of the host. What an agent's thread can still reach
 * there (SECURITY.md lists it) and what the host does about it: a forged line written into the
 * run's trace.jsonl through the host's descriptor is found on close and the file written again
 * from what the host recorded.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { runRollout } from '../../src/index.js';
import { AgentPool } from '../../src/pool/pool.js';
import { tempDir, testWorld } from '../helpers.js';

const out = tempDir('silo-thread-mode-');
const pool = new AgentPool({ maxThreads: 1 });
afterAll(async () => {
  await pool.destroy();
  out.remove();
});

describe('an agent in a thread of the host', () => {
  it("cannot leave a forged line in its run's trace.jsonl by writing to the host's descriptors", async () => {
    const world = testWorld();
    const agent = fileURLToPath(new URL('../../fixtures/agents/hostile/writes-host-files.mjs', import.meta.url));
    const result = await runRollout({ task: world.task, agent, outDir: out.dir, pool, limits: { timeoutMs: 10_000 } });
    // The attack itself went through: the descriptor was there to write to.
    expect(result.output).toMatch(/^wrote a forged line into [1-9]\d* files$/);
    const lines = readFileSync(join(result.runDir, 'trace.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { seq: number; forged?: true });
    expect(lines.filter((l) => l.forged)).toEqual([]);
    expect(lines.map((l) => l.seq)).toEqual(lines.map((_, i) => i));
    expect(lines.at(-1)).toMatchObject({ type: 'run_finished', status: result.status, termination: 'returned' });
  });
});
