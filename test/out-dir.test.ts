import { existsSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { SiloError } from '../src/errors.js';
import { makeFolder, outDirAccess } from '../src/out-dir.js';
import { tempDir } from './helpers.js';

const tmp = tempDir('silo-out-dir-');
afterAll(() => tmp.remove());

/** The set-up error makeFolder's failure becomes under `--out`. */
async function refusal(dir: string): Promise<SiloError> {
  const error = await outDirAccess(dir, () => makeFolder(dir)).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(SiloError);
  expect((error as SiloError).code).toBe('SILO_OUT_NOT_WRITABLE');
  return error as SiloError;
}

describe('makeFolder', () => {
  it('makes the missing levels, and takes a folder that is there (or a link to one) as it is', () => {
    const deep = join(tmp.dir, 'a', 'b', 'c');
    makeFolder(deep);
    expect(statSync(deep).isDirectory()).toBe(true);
    makeFolder(deep);
    const link = join(tmp.dir, 'link');
    symlinkSync(join(tmp.dir, 'a'), link);
    makeFolder(join(link, 'b'));
    makeFolder(join(link, 'd'));
    expect(existsSync(join(tmp.dir, 'a', 'd'))).toBe(true);
  });

  it('refuses a file in the way', async () => {
    const file = join(tmp.dir, 'file');
    writeFileSync(file, '');
    expect((await refusal(file)).message).toMatch(/: a file is in the way of a folder \(EEXIST\); give --out a folder/);
    expect((await refusal(join(file, 'x', 'y'))).message).toMatch(/: a file is in the way of a folder \(ENOTDIR\)/);
  });

  it('names a link on the way that points to nothing', async () => {
    const dangling = join(tmp.dir, 'dangling');
    symlinkSync(join(tmp.dir, 'nowhere'), dangling);
    expect((await refusal(join(dangling, 'x', 'y'))).message).toMatch(/: a link on the way points to nothing \(ENOENT at .*dangling\)/);
    expect(existsSync(join(tmp.dir, 'nowhere'))).toBe(false);
  });

  // Node's recursive mkdir never returns there: it tries the same level again and again.
  it.runIf(existsSync('/proc/self'))('refuses at once a file system that makes no folders (/proc), naming --out', async () => {
    const started = Date.now();
    expect((await refusal('/proc/silo-nope/a/b')).message).toBe(
      'cannot write to /proc/silo-nope/a/b: no folder can be made there (ENOENT at /proc/silo-nope); give --out a folder you can write to, or fix its permissions',
    );
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});
