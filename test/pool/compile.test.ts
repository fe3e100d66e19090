/** Compiled TypeScript agents do not pile up in the temporary folder: old ones are removed. */
import { mkdirSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { privateFolderPath, pruneCompiledAgents } from '../../src/pool/private-folder.js';
import { tempDir } from '../helpers.js';

const home = tempDir('silo-compiled-');
afterAll(() => home.remove());

describe('pruneCompiledAgents', () => {
  it('removes compiled agents (and half-written ones) last written over 30 days ago, and nothing else', () => {
    const dir = join(home.dir, 'compiled');
    mkdirSync(dir);
    const now = Date.now();
    const files = { 'old.mjs': 40, 'old.mjs.123.tmp': 40, 'young.mjs': 1, 'old-but-not-ours.txt': 40 };
    for (const [name, days] of Object.entries(files)) {
      writeFileSync(join(dir, name), '');
      const at = new Date(now - days * 24 * 3600 * 1000);
      utimesSync(join(dir, name), at, at);
    }
    pruneCompiledAgents(dir, now);
    expect(readdirSync(dir).sort()).toEqual(['old-but-not-ours.txt', 'young.mjs']);
  });

  it('follows TMPDIR (and TMP, TEMP) as it changes, though it is worked out once a rollout', () => {
    const saved = { TMPDIR: process.env.TMPDIR, TMP: process.env.TMP, TEMP: process.env.TEMP };
    const name = `silo-agents-${process.getuid?.() ?? 'user'}`;
    try {
      delete process.env.TMP;
      delete process.env.TEMP;
      process.env.TMPDIR = join(home.dir, 'one');
      expect(privateFolderPath()).toBe(join(home.dir, 'one', name));
      expect(privateFolderPath()).toBe(join(home.dir, 'one', name));
      process.env.TMPDIR = join(home.dir, 'two');
      expect(privateFolderPath()).toBe(join(home.dir, 'two', name));
      delete process.env.TMPDIR;
      process.env.TMP = join(home.dir, 'three');
      expect(privateFolderPath()).toBe(join(home.dir, 'three', name));
    } finally {
      for (const [key, value] of Object.entries(saved)) {
        if (value === undefined) delete process.env[key];
        else process.env[key] = value;
      }
    }
  });

  it("clears out the private folder's tasks and validators folders too, once a day", async () => {
    const tmp = join(home.dir, 'tmp');
    const folder = join(tmp, `silo-agents-${process.getuid?.() ?? 'user'}`);
    const now = Date.now();
    const old = new Date(now - 40 * 24 * 3600 * 1000);
    for (const sub of ['tasks', 'validators']) {
      mkdirSync(join(folder, sub), { recursive: true, mode: 0o700 });
      for (const name of ['old.tasks.mjs', 'old.prepared.json', 'validator-old.cjs']) {
        writeFileSync(join(folder, sub, name), '');
        utimesSync(join(folder, sub, name), old, old);
      }
      writeFileSync(join(folder, sub, 'young.tasks.mjs'), '');
    }
    const saved = process.env.TMPDIR;
    process.env.TMPDIR = tmp;
    try {
      vi.resetModules();
      const { privateSubfolder } = await import('../../src/pool/private-folder.js');
      privateSubfolder('tasks');
    } finally {
      process.env.TMPDIR = saved;
    }
    for (const sub of ['tasks', 'validators']) expect(readdirSync(join(folder, sub))).toEqual(['young.tasks.mjs']);
  });
});
