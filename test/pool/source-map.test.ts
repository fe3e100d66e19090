/**
 * A compiled TypeScript agent's stack traces, mapped back to its own files on the host: the
 * frames of the compiled module (as a path, as a URL, with the query a fresh instance adds) become
 * source positions, a first line lengthened by import.meta values keeps its columns, and text
 * that does not quote the compiled module is left alone.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { performance } from 'node:perf_hooks';
import { afterAll, describe, expect, it } from 'vitest';
import { compileAgent } from '../../src/pool/compile.js';
import { loadScript } from '../../src/pool/script.js';
import { tempDir } from '../helpers.js';

const home = tempDir('silo-source-map-');
afterAll(() => home.remove());

/** The error a compiled agent's default export throws, with its stack. */
async function thrownBy(file: string, query = ''): Promise<Error> {
  const mod = (file.endsWith('.cjs') ? loadScript(file) : await import(pathToFileURL(file).href + query)) as { default: () => unknown };
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
  // The same with a top-level await: compiled as an ES module, not a script.
  writeFileSync(join(folder, 'awaits.ts'), ["import { deep } from './lib/deep.js';", 'await Promise.resolve();', 'export default function agent(): string {', '  return deep(2);', '}', ''].join('\n'));
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
    const compiled = await compileAgent(join(folder, 'awaits.ts'));
    expect(compiled.script).toBe(false);
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
    expect(compiled.stacks.map(nowhere)).toBe(nowhere);
  });

  it("stays linear in what a hostile agent logs: 4 MiB of the compiled module's path and '?' map at once", async () => {
    const compiled = await compileAgent(join(folder, 'agent.ts'));
    const crafted = `${compiled.file}?`.repeat(Math.ceil((4 * 2 ** 20) / (compiled.file.length + 1)));
    const started = performance.now();
    expect(compiled.stacks.map(crafted)).toBe(crafted);
    // A generous bound: a query pattern that scanned on to the end of the text from every match
    // took minutes here; the bounded one takes milliseconds.
    expect(performance.now() - started).toBeLessThan(10_000);
  });

  it('maps frames in a bundled CommonJS package, whose module function the compiler made a parenthesised one, and the line it throws on as it loads', async () => {
    const dir = join(home.dir, 'cjs');
    const pkg = join(dir, 'node_modules', 'thrower');
    mkdirSync(pkg, { recursive: true });
    writeFileSync(join(pkg, 'package.json'), JSON.stringify({ name: 'thrower', main: 'index.js' }));
    writeFileSync(
      join(pkg, 'index.js'),
      ['"use strict";', 'function fail() {', "  throw new Error('cjs bottom');", '}', 'exports.boom = function boom() {', '  return fail();', '};', ''].join('\n'),
    );
    // Required when the agent runs: the module's own code throws as it loads.
    writeFileSync(join(pkg, 'loads.js'), ['"use strict";', 'const n = 1;', "if (n) throw new Error('at load');", ''].join('\n'));
    writeFileSync(
      join(dir, 'agent.ts'),
      [
        "import { boom } from 'thrower';",
        'declare const require: (id: string) => unknown;',
        'export default function agent(): unknown {',
        "  try { return boom(); } catch (err) { return [err, (() => { try { return require('thrower/loads.js'); } catch (e) { return e; } })()]; }",
        '}',
        '',
      ].join('\n'),
    );
    const compiled = await compileAgent(join(dir, 'agent.ts'));
    expect(compiled.script).toBe(true);
    expect(readFileSync(compiled.file, 'utf8')).toMatch(/node_modules\/thrower\/index\.js":\(function\(/);
    const [inCall, atLoad] = (loadScript(compiled.file) as { default: () => [Error, Error] }).default();
    const mapped = compiled.stacks.map(inCall!.stack!);
    // The error is made on line 3, column 9; the call of fail() on line 6, column 10.
    expect(mapped).toContain(`${join(pkg, 'index.js')}:3:9`);
    expect(mapped).toContain(`${join(pkg, 'index.js')}:6:10`);
    expect(compiled.stacks.map(atLoad!.stack!)).toContain(`${join(pkg, 'loads.js')}:3:14`);
    // The agent's own call, after its import of the package on the same line of the compiled module.
    expect(mapped).toContain(`${join(dir, 'agent.ts')}:4:16`);
  });

  it('names source files whose paths have characters a URL encodes (é, #, %, spaces)', async () => {
    const odd = join(home.dir, 'ünï #1 %20 x');
    mkdirSync(odd, { recursive: true });
    writeFileSync(join(odd, 'agent.ts'), 'export default (): never => { throw new Error(import.meta.url); };\n');
    const compiled = await compileAgent(join(odd, 'agent.ts'));
    const error = await thrownBy(compiled.file);
    expect(error.message).toBe(pathToFileURL(join(odd, 'agent.ts')).href);
    expect(compiled.stacks.map(error.stack!)).toContain(`${join(odd, 'agent.ts')}:1:37`);
  });

  it("compiles modules that import.meta's values cannot be found in by their text, or that use the names Silo's would have", async () => {
    const dir = join(home.dir, 'corners');
    mkdirSync(join(dir, 'node_modules', 'local'), { recursive: true });
    // Bundled by a relative import though under node_modules; import.meta spelled with a space;
    // a variable of the name Silo used before its names got a tag.
    writeFileSync(join(dir, 'node_modules', 'local', 'where.js'), 'export const where = () => import.meta.url;\n');
    writeFileSync(
      join(dir, 'agent.ts'),
      [
        "import { where } from './node_modules/local/where.js';",
        'const __siloMetaUrl = 1;',
        'export default () => JSON.stringify([where(), import .meta.url, __siloMetaUrl]);',
        '',
      ].join('\n'),
    );
    const compiled = await compileAgent(join(dir, 'agent.ts'));
    const { default: agent } = (compiled.script ? loadScript(compiled.file) : await import(pathToFileURL(compiled.file).href)) as { default: () => string };
    expect(JSON.parse(agent())).toEqual([pathToFileURL(join(dir, 'node_modules', 'local', 'where.js')).href, pathToFileURL(join(dir, 'agent.ts')).href, 1]);
  });
});
