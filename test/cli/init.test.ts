/** `silo init` as a user meets it: the built binary, in folders of their choosing. */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../helpers.js';
import { runSilo } from './silo.js';

const tmp = tempDir('silo-init-');
afterAll(() => tmp.remove());

describe('silo init', () => {
  it('prints each next command with what it does, the comments in one column, and the paths as the user would type them', async () => {
    const dir = join(tmp.dir, 'project');
    const r = await runSilo(['init', dir]);
    expect(r.code).toBe(0);
    const lines = r.stdout.split('\n');
    // (a folder outside the working one: absolute, not ../../..)
    expect(lines[0]).toBe(`  created ${dir}/evals/environment.ts`);
    const next = lines.slice(lines.indexOf('Next:') + 1, lines.indexOf('Next:') + 3);
    expect(next).toEqual([
      expect.stringMatching(new RegExp(`^  npx silo check ${dir}/evals +# lint the tasks \\(0 errors expected\\)$`)),
      `  npx silo eval ${dir}/evals --agent ${dir}/evals/agents/solver.ts  # the scripted agent passes all three`,
    ]);
    expect(new Set(next.map((l) => l.indexOf('  # ')))).toHaveProperty('size', 1);
  });

  // Node's recursive mkdir spins there for ever, deaf to Ctrl-C: the child is killed after 30 s.
  it.runIf(existsSync('/proc/self'))('exits 2 at once for a folder where no folder can be made (/proc), naming it', async () => {
    const r = await runSilo(['init', '/proc/nope'], {}, { timeoutMs: 30_000, killSignal: 'SIGKILL' });
    expect(r.stderr).toBe('silo: cannot write to /proc/nope: no folder can be made there (ENOENT); give silo init a folder you can write to, or fix its permissions\n');
    expect(r.code).toBe(2);
  });
});
