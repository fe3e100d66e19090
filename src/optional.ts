/**
 * Optional peer dependencies: the queue (bullmq, ioredis), MCP (@modelcontextprotocol/sdk) and
 * the LLM SDKs of the built-in agents (openai, @anthropic-ai/sdk) are not installed with Silo; a
 * feature imports its packages only when it runs, and a missing one is a usage error that names
 * the command to install it.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SiloError } from './errors.js';

/** What each optional feature needs: its packages, and how a user names the feature. */
export const OPTIONAL_FEATURES = {
  queue: { packages: ['bullmq', 'ioredis'], what: 'silo eval --queue and silo worker need' },
  mcp: { packages: ['@modelcontextprotocol/sdk'], what: 'silo serve needs' },
  openai: { packages: ['openai'], what: 'the built-in agent openai:<model> needs' },
  anthropic: { packages: ['@anthropic-ai/sdk'], what: 'the built-in agent anthropic:<model> needs' },
} as const;

export type OptionalFeature = keyof typeof OPTIONAL_FEATURES;

/** The one-line error for a feature whose packages are missing. */
export function missingPackages(feature: OptionalFeature, missing: readonly string[]): SiloError {
  const { packages, what } = OPTIONAL_FEATURES[feature];
  return new SiloError('SILO_MISSING_PACKAGE', `${what} ${missing.join(' and ')}: npm install ${packages.join(' ')}`);
}

/** True when `err` says that `pkg` itself (not something it imports) cannot be found. */
function isMissing(err: unknown, pkg: string): boolean {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (e?.code !== 'ERR_MODULE_NOT_FOUND' && e?.code !== 'MODULE_NOT_FOUND') return false;
  const message = String(e.message ?? '');
  return message.includes(`'${pkg}'`) || message.includes(`'${pkg}/`) || message.includes(`"${pkg}"`);
}

/**
 * Imports the modules of an optional feature (in parallel), turning a missing package into the
 * feature's one-line usage error; any other failure is thrown as it is.
 */
export async function importOptional<T extends unknown[]>(feature: OptionalFeature, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    const missing = OPTIONAL_FEATURES[feature].packages.filter((pkg) => isMissing(err, pkg));
    if (missing.length > 0) throw missingPackages(feature, missing);
    throw err;
  }
}

/**
 * Whether `pkg` is installed where Silo's own modules find it: in a node_modules folder above
 * this file, as Node's resolution looks (npm's hoisting and pnpm's links to peers alike). Without
 * importing it, and whatever the package exports.
 */
function installed(pkg: string): boolean {
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'node_modules', pkg, 'package.json'))) return true;
    if (dirname(dir) === dir) return false;
  }
}

/** Throws the feature's usage error when one of its packages is not installed. */
export function requireOptional(feature: OptionalFeature): void {
  const missing = OPTIONAL_FEATURES[feature].packages.filter((pkg) => !installed(pkg));
  if (missing.length > 0) throw missingPackages(feature, missing);
}
