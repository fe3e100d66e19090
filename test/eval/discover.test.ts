/**
 * Which files an eval loads from its path arguments: files as given; in folders, recursively,
 * the files named tasks.*, *.task.* or *.tasks.* (.js, .mjs, .ts), never inside node_modules or
 * dot-folders.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { discoverTaskFiles } from '../../src/eval/discover.js';
import { SiloError } from '../../src/errors.js';
import { tempDir } from '../helpers.js';

const tmp = tempDir('silo-discover-');
afterAll(() => tmp.remove());

/** Creates empty files (and their folders) under a new folder; returns the folder. */
function tree(name: string, files: string[]): string {
  const root = join(tmp.dir, name);
  for (const file of files) {
    mkdirSync(join(root, file, '..'), { recursive: true });
    writeFileSync(join(root, file), '');
  }
  mkdirSync(root, { recursive: true });
  return root;
}

function found(root: string, paths: string[] = [root]): string[] {
  return discoverTaskFiles(paths)
    .map((f) => relative(root, f))
    .sort();
}

describe('discoverTaskFiles', () => {
  it('picks tasks.*, *.task.* and *.tasks.* with .js, .mjs or .ts, in every subfolder', () => {
    const root = tree('names', [
      'tasks.ts',
      'tasks.js',
      'tasks.mjs',
      'retail/refund.task.ts',
      'retail/deep/er/orders.tasks.mjs',
      'helpdesk/all.tasks.js',
      'helpdesk/one.task.mjs',
    ]);
    expect(found(root)).toEqual(
      [
        'helpdesk/all.tasks.js',
        'helpdesk/one.task.mjs',
        'retail/deep/er/orders.tasks.mjs',
        'retail/refund.task.ts',
        'tasks.js',
        'tasks.mjs',
        'tasks.ts',
      ].sort(),
    );
  });

  it('skips every other name: other extensions, lookalikes, environments and data', () => {
    const root = tree('others', [
      'tasks.ts',
      'tasks.json',
      'tasks.cjs',
      'tasks.d.ts.map',
      'tasks.ts.bak',
      'my-tasks.ts',
      'mytasks.ts',
      'tasks-dev.json',
      'environment.ts',
      'task.ts',
      'tasks.py',
      'a.tasksx.ts',
      'data.json',
      'README.md',
    ]);
    expect(found(root)).toEqual(['tasks.ts']);
  });

  it('never looks inside node_modules or dot-folders, however deep', () => {
    const root = tree('skipped', [
      'tasks.ts',
      'node_modules/pkg/tasks.ts',
      'sub/node_modules/pkg/x.task.ts',
      '.silo/runs/tasks.mjs',
      '.git/a.tasks.js',
      'sub/.hidden/b.task.ts',
      'sub/ok.task.ts',
    ]);
    expect(found(root)).toEqual(['sub/ok.task.ts', 'tasks.ts']);
  });

  it('takes a file argument as given, whatever its name, and absolute', () => {
    const root = tree('files', ['anything.ts', 'tasks.ts']);
    const files = discoverTaskFiles([join(root, 'anything.ts')]);
    expect(files).toEqual([join(root, 'anything.ts')]);
  });

  it('lists a file once even when named twice or found through its folder too', () => {
    const root = tree('dupes', ['tasks.ts', 'sub/x.task.ts']);
    expect(found(root, [root, join(root, 'tasks.ts'), join(root, 'sub')])).toEqual(['sub/x.task.ts', 'tasks.ts']);
  });

  it('finds the helpdesk fixture folder', () => {
    expect(discoverTaskFiles(['fixtures/helpdesk']).map((f) => relative(process.cwd(), f))).toEqual(['fixtures/helpdesk/tasks.ts']);
  });

  it('throws a SiloError naming a missing path', () => {
    const missing = join(tmp.dir, 'no-such-folder');
    let thrown: unknown;
    try {
      discoverTaskFiles([missing]);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(SiloError);
    expect((thrown as SiloError).message).toContain(missing);
  });

  it('throws a SiloError for a folder with no task files, saying how task files are named', () => {
    const root = tree('empty', ['README.md', 'node_modules/tasks.ts', 'environment.ts']);
    let thrown: unknown;
    try {
      discoverTaskFiles([root]);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(SiloError);
    const message = (thrown as SiloError).message;
    expect(message).toContain(root);
    expect(message).toMatch(/tasks\.ts/);
    expect(message).toMatch(/\*\.task\.ts/);
    expect(message).toMatch(/\*\.tasks\.ts/);
    expect(message).not.toContain('\n');
  });
});
