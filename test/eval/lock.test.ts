/**
 * One process at a time per eval folder: a second owner is refused with the eval's id, and an
 * owner that died (same host: its pid is gone; another host: its lock went stale) never leaves
 * the eval stuck.
 */
import { existsSync, readFileSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { evalLocked, LOCK_STALE_MS, lockEval } from '../../src/eval/lock.js';
import { runEval, SiloError } from '../../src/index.js';
import { deadPid, tempDir } from '../helpers.js';

const tmp = tempDir('silo-lock-');
afterAll(() => tmp.remove());

let n = 0;
const folder = (): string => join(tmp.dir, `eval-${n++}`);


describe('lockEval', () => {
  it('holds the folder until released, refusing a second owner with the eval id and the holder', () => {
    const dir = folder();
    const lock = lockEval(dir, 'ci-1');
    expect(evalLocked(dir)).toBe(true);
    expect(() => lockEval(dir, 'ci-1')).toThrow(SiloError);
    expect(() => lockEval(dir, 'ci-1')).toThrow(new RegExp(`^eval ci-1 is being run by another process \\(pid ${process.pid} on ${hostname()}, since .*\\); wait for it to finish`));
    lock.release();
    expect(evalLocked(dir)).toBe(false);
    expect(existsSync(join(dir, 'lock'))).toBe(false);
    lockEval(dir, 'ci-1').release();
  });

  it('takes over the lock of a process on this host that is gone (a crashed owner)', () => {
    const dir = folder();
    lockEval(dir, 'x').release();
    writeFileSync(join(dir, 'lock'), JSON.stringify({ pid: deadPid(), host: hostname(), since: '2026-01-01T00:00:00.000Z' }));
    expect(evalLocked(dir)).toBe(false);
    const lock = lockEval(dir, 'x');
    expect(JSON.parse(readFileSync(join(dir, 'lock'), 'utf8'))).toMatchObject({ pid: process.pid, host: hostname() });
    lock.release();
  });

  it('trusts the lock of another host while it is refreshed, and takes it over once stale', () => {
    const dir = folder();
    lockEval(dir, 'x').release();
    const file = join(dir, 'lock');
    writeFileSync(file, JSON.stringify({ pid: 1, host: 'elsewhere.example', since: '2026-01-01T00:00:00.000Z' }));
    expect(() => lockEval(dir, 'x')).toThrow(/pid 1 on elsewhere\.example/);
    const old = (Date.now() - LOCK_STALE_MS - 1_000) / 1000;
    utimesSync(file, old, old);
    lockEval(dir, 'x').release();
  });

  it('does not take over a lock it cannot read until it goes stale', () => {
    const dir = folder();
    lockEval(dir, 'x').release();
    const file = join(dir, 'lock');
    writeFileSync(file, '{"pi');
    expect(() => lockEval(dir, 'x')).toThrow(/being run by another process/);
    const old = (Date.now() - LOCK_STALE_MS - 1_000) / 1000;
    utimesSync(file, old, old);
    lockEval(dir, 'x').release();
  });
});

describe('runEval and the lock', () => {
  it('refuses a second eval of the same id into the same folder while the first runs, and counts each pair once', async () => {
    const out = folder();
    const first = runEval({ paths: ['fixtures/eval/quick.tasks.mjs'], agent: 'fixtures/agents/slow-answer.mjs', trials: 2, outDir: out, evalId: 'twice', isolation: 'thread' });
    // Wait until the first owns the folder.
    for (let i = 0; i < 4800 && !evalLocked(join(out, 'evals', 'twice')); i++) await new Promise((r) => setTimeout(r, 25));
    const second = runEval({ paths: ['fixtures/eval/quick.tasks.mjs'], agent: 'fixtures/agents/slow-answer.mjs', trials: 2, outDir: out, evalId: 'twice', isolation: 'thread' });
    await expect(second).rejects.toThrow(/eval twice is being run by another process/);
    const summary = await first;
    expect(summary.totals.runs).toBe(6);
    // Once it is done, the id is taken, not locked: the message says how to continue it.
    await expect(runEval({ paths: ['fixtures/eval/quick.tasks.mjs'], agent: 'fixtures/agents/slow-answer.mjs', outDir: out, evalId: 'twice' })).rejects.toThrow(
      /an eval twice already exists .*--resume twice/,
    );
    const resumed = await runEval({ resume: 'twice', outDir: out, isolation: 'thread' });
    expect(resumed.totals.runs).toBe(6);
    expect(readFileSync(join(out, 'evals', 'twice', 'runs.jsonl'), 'utf8').trim().split('\n')).toHaveLength(6);
    expect(evalLocked(join(out, 'evals', 'twice'))).toBe(false);
  });
});
