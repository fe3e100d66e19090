/**
 * A compiled TypeScript agent's stack traces, mapped back to its own files on the host: the
 * frames of the compiled module (as a path, as a URL, with the query a fresh instance adds) become
 * source positions, a first line lengthened by import.meta values keeps its columns, and text
 * that does not quote the compiled module is left alone.
 */
import { writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { compileAgent } from '../../src/pool/compile.js';
import { tempDir } from '../helpers.js';

const home = tempDir('silo-source-map-');
afterAll(() => home.remove());

/** The error a compiled agent's default export throws, with its stack. */
async function thrownBy(file: string, query = ''): Promise<Error> {
  const mod = (await import(pathToFileURL(file).href + query)) as { default: () => unknown };
  try {
    mod.default();
  } catch (err) {
    return err as Error;
  }
  throw new Error('the agent did not throw');
}

describe('StackMapper', () => {
  const folder = join(home.dir, 'agent');
  mkdirSync(join(folder, 'lib'), { recursive: true });
  // Line 1 throws (after import.meta values were put in front of it); lib/deep.ts line 3 too.
  writeFileSync(join(folder, 'first-line.ts'), "export default (): never => { throw new Error(`at ${import.meta.url}`); };\n");
  writeFileSync(
    join(folder, 'agent.ts'),
    ["import { deep } from './lib/deep.js';", '', 'export default function agent(): string {', '  return deep(2);', '}', ''].join('\n'),
  );
  writeFileSync(join(folder, 'lib', 'deep.ts'), ['export function deep(n: number): string {', "  if (n > 0) return deep(n - 1);", "  throw new Error('bottom');", '}', ''].join('\n'));

  it("maps every frame of the compiled module to the agent's files, lines and columns", async () => {
    const compiled = await compileAgent(join(folder, 'agent.ts'));
    const error = await thrownBy(compiled.file);
    expect(error.stack).toContain(compiled.file);
    const mapped = compiled.stacks.map(error.stack!);
    expect(mapped).not.toContain(compiled.file);
    const deep = join(folder, 'lib', 'deep.ts');
    // The error is made on line 3, column 9 (V8 names the `new`); the recursive calls on line 2,
    // column 21; the agent's call on line 4.
    expect(mapped).toContain(`${deep}:3:9`);
    expect(mapped.match(new RegExp(`${deep.replace(/[.]/g, '\\.')}:2:21`, 'g'))).toHaveLength(2);
    expect(mapped).toContain(`${join(folder, 'agent.ts')}:4:10`);
  });

  it('maps frames of a fresh instance (a query on the URL) and frames given as a plain path', async () => {
    const compiled = await compileAgent(join(folder, 'agent.ts'));
    const error = await thrownBy(compiled.file, '?silo-instance=7');
    expect(error.stack).toContain('?silo-instance=7');
    expect(compiled.stacks.map(error.stack!)).toContain(`${join(folder, 'lib', 'deep.ts')}:3:9`);
    const line = error.stack!.split('\n').find((l) => l.includes('?silo-instance=7'))!;
    const [, row, column] = /:(\d+):(\d+)\)?$/.exec(line)!;
    expect(compiled.stacks.map(`at ${compiled.file}:${row}:${column}`)).toMatch(/deep\.ts:\d+:\d+$/);
  });

  it('keeps the columns of a first line that import.meta values were put in front of', async () => {
    const compiled = await compileAgent(join(folder, 'first-line.ts'));
    const error = await thrownBy(compiled.file);
    // The module sees its own URL, and its error is made at line 1, column 37 of what the user wrote.
    expect(error.message).toBe(`at ${pathToFileURL(join(folder, 'first-line.ts')).href}`);
    expect(compiled.stacks.map(error.stack!)).toContain(`${join(folder, 'first-line.ts')}:1:37`);
  });

  it('leaves text alone that does not quote the compiled module, and positions it has no mapping for', async () => {
    const compiled = await compileAgent(join(folder, 'agent.ts'));
    const plain = 'Error: x\n    at f (file:///elsewhere/agent.mjs:3:4)';
    expect(compiled.stacks.map(plain)).toBe(plain);
    const nowhere = `at ${compiled.file}:99999:1`;
    expect(compiled.stacks.map(nowhere)).toMatch(/:\d+:\d+$/);
  });
});
