import { readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runRollout, SiloError } from '../../src/index.js';
import { AgentPool } from '../../src/pool/pool.js';
import { task } from '../builders.js';
import { readRunFiles, tempDir } from '../helpers.js';

const out = tempDir('silo-artifacts-');
const pool = new AgentPool({ maxThreads: 1, reuse: true });
afterAll(async () => {
  await pool.destroy();
  out.remove();
});

const passing = task(() => [{ name: 'ok', pass: true }]);
const rollout = (outDir: string) => runRollout({ task: passing, agent: 'fixtures/agents/do-nothing.ts', outDir, pool, seed: 1 });

describe('run folders made in the background', () => {
  it('leaves every later run of a process whole: its four files, run.json last, no temporary file', async () => {
    const dir = join(out.dir, 'whole');
    const runs = [];
    for (let i = 0; i < 5; i++) runs.push(await rollout(dir));
    for (const r of runs) {
      expect(readdirSync(r.runDir).sort()).toEqual(['result.json', 'run.json', 'state-diff.json', 'trace.jsonl']);
      const files = readRunFiles(r.runDir);
      expect(files.run.status).toBe('passed');
      expect(files.run.worldHash).toMatch(/^[0-9a-f]{64}$/);
      expect(files.result.status).toBe('passed');
      expect(files.diff).toEqual([]);
      expect(files.trace.map((e) => e.type)).toContain('run_finished');
    }
  });

  it('turns a folder that cannot be made in the background into the set-up error it is up front', async () => {
    const dir = join(out.dir, 'taken');
    await rollout(dir); // made at once: the folder can be written
    // Then a file takes the place of the runs folder: the next run's folder cannot be made.
    rmSync(join(dir, 'runs'), { recursive: true });
    writeFileSync(join(dir, 'runs'), 'not a folder');
    const err = await rollout(dir).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(SiloError);
    expect((err as SiloError).code).toBe('SILO_OUT_NOT_WRITABLE');
    expect((err as SiloError).message).toContain('a file is in the way of a folder');
  });
});
