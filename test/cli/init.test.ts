/** `silo init` as a user meets it: the built binary, in folders of their choosing. */
import { existsSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers.js';
import { runSilo } from './silo.js';

const tmp = tempDir('silo-init-');
afterAll(() => tmp.remove());

describe('silo init', () => {
  // Node's recursive mkdir spins there for ever, deaf to Ctrl-C: the child is killed after 30 s.
  it.runIf(existsSync('/proc/self'))('exits 2 at once for a folder where no folder can be made (/proc), naming it', async () => {
    const r = await runSilo(['init', '/proc/nope'], {}, { timeoutMs: 30_000, killSignal: 'SIGKILL' });
    expect(r.stderr).toBe('silo: cannot write to /proc/nope: no folder can be made there (ENOENT); give silo init a folder you can write to, or fix its permissions\n');
    expect(r.code).toBe(2);
  });
});
