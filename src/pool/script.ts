/**
 * The worker's side of a compiled agent script (see src/pool/compile.ts): the script is a function
 * of what Node gives a CommonJS module; it runs with the V8 code cache the host made next to it.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { Script } from 'node:vm';

/** Compiled scripts this thread has loaded, by path (a reused worker runs the same one again). */
const scripts = new Map<string, Script>();

/**
 * Runs a compiled agent script (src/pool/compile.ts) as Node runs a CommonJS module, with the
 * code cache the host made for it, and gives what it exports. Each call is a fresh instance.
 */
export function loadScript(path: string): unknown {
  let script = scripts.get(path);
  if (!script) {
    let cachedData: Buffer | undefined;
    try {
      cachedData = readFileSync(`${path}.cache`);
    } catch {
      // none: V8 compiles it all here
    }
    script = new Script(readFileSync(path, 'utf8'), { filename: path, ...(cachedData ? { cachedData } : {}) });
    scripts.set(path, script);
  }
  const wrapper = script.runInThisContext() as (exports: unknown, require: NodeJS.Require, module: { exports: unknown }, filename: string, dirname: string) => void;
  const module = { exports: {} as unknown };
  wrapper.call(module.exports, module.exports, createRequire(path), module, path, dirname(path));
  return module.exports;
}

/** Whether V8 took the code cache of a script this thread loaded (undefined: not loaded, or none). */
export function codeCacheTaken(path: string): boolean | undefined {
  const script = scripts.get(path);
  return script?.cachedDataRejected === undefined ? undefined : !script.cachedDataRejected;
}
