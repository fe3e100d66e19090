/** What user modules need to load the same everywhere. No side effects: workers import it. */

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
