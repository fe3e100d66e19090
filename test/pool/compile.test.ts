/** Compiled TypeScript agents do not pile up in the temporary folder: old ones are removed. */
import { mkdirSync, readdirSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { pruneCompiledAgents } from '../../src/pool/private-folder.js';
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
});
