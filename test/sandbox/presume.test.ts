/**
 * The presumption that bubblewrap (or unshare) works stands until a sandbox started on it fails:
 * it is asked at every rollout's start until the first sandbox came up, and PATH is searched once
 * for it, not once a rollout.
 */
import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { forgetPresumed, presumeBwrap, presumeUnshare } from '../../src/sandbox/jail.js';
import { tempDir } from '../helpers.js';

const tmp = tempDir('silo-presume-test-');
const PATH = process.env.PATH;
afterAll(() => tmp.remove());
afterEach(() => {
  process.env.PATH = PATH;
});

/** A folder holding an executable of each name (never run: only found). */
function folderWith(...names: string[]): string {
  const dir = join(tmp.dir, names.join('-'));
  mkdirSync(dir, { recursive: true });
  for (const name of names) {
    writeFileSync(join(dir, name), '#!/bin/sh\nexit 0\n');
    chmodSync(join(dir, name), 0o755);
  }
  return dir;
}

describe('presuming a sandbox level', () => {
  it('searches PATH for bwrap once, and again only once the presumption was given up', () => {
    process.env.PATH = folderWith('bwrap');
    expect(presumeBwrap()).toBe('presumed');
    // Gone from PATH: still presumed (no second search) until a sandbox started on it fails.
    process.env.PATH = join(tmp.dir, 'nothing-here');
    expect(presumeBwrap()).toBe('presumed');
    forgetPresumed('bwrap');
    expect(presumeBwrap()).toBe(false);
  });

  it('searches PATH for unshare once, likewise', () => {
    process.env.PATH = folderWith('unshare', 'setsid');
    expect(presumeUnshare()).toBe('presumed');
    process.env.PATH = join(tmp.dir, 'nothing-here');
    expect(presumeUnshare()).toBe('presumed');
    forgetPresumed('unshare');
    expect(presumeUnshare()).toBe(false);
  });
});
