/** What user modules need to load the same everywhere. No side effects: workers import it. */
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';

/** True for the file names that need the TypeScript loader (tsx). */
export function isTypeScript(path: string): boolean {
  return /\.(c|m)?tsx?$/.test(path);
}

/**
 * The exports an ES module compiled to CommonJS declared. In a `"type": "commonjs"` project a
 * `.ts` (or transpiled `.js`) module's `export default` becomes `exports.default`, and importing
 * it hands back all of `module.exports` as the default, one level too deep; such a module (marked
 * `__esModule`, as TypeScript, esbuild and Babel mark it) is unwrapped to what it declared.
 */
export function esModuleExports(mod: Record<string, unknown>): Record<string, unknown> {
  const inner = mod.default as Record<string, unknown> | null | undefined;
  if (typeof inner === 'object' && inner !== null && (inner as { __esModule?: unknown }).__esModule === true) return inner;
  return mod;
}

/** Whether Node loads `file` as CommonJS (by its extension, else its package's `type`). */
export function isCommonJs(file: string): boolean {
  if (file.endsWith('.cjs')) return true;
  if (!file.endsWith('.js')) return false;
  for (let dir = dirname(file); ; dir = dirname(dir)) {
    try {
      return (JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { type?: unknown }).type !== 'module';
    } catch {
      // no package.json here (or not JSON): the folder above
    }
    if (dirname(dir) === dir) return true;
  }
}
