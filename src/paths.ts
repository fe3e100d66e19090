/** Where Silo's own files are, whether it runs built (dist/) or from source (tests). */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The folder above this file whose package.json names this package: the repository when run from
 * source (tests), the installed package when run from `dist/` (npm, pnpm's `.pnpm/...` folders and
 * links alike: this file's own path is where its package is). Only what the tarball ships is
 * relied on.
 */
function findRoot(): { root: string; version: string } {
  const start = dirname(fileURLToPath(import.meta.url));
  for (let dir = start; ; dir = dirname(dir)) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        const pkg = JSON.parse(readFileSync(manifest, 'utf8')) as { name?: unknown; version?: unknown };
        if (pkg.name === 'silo' && typeof pkg.version === 'string') return { root: dir, version: pkg.version };
      } catch {
        // not a readable manifest: keep looking above it
      }
    }
    if (dirname(dir) === dir) throw new Error(`cannot find the package.json of silo above ${start}; reinstall the package`);
  }
}

const found = findRoot();

/** The package root (holds package.json). */
export const PACKAGE_ROOT = found.root;

/** The built worker entry; workers always run built JavaScript, never TypeScript sources. */
export const WORKER_ENTRY = join(PACKAGE_ROOT, 'dist', 'workers', 'agent.cjs');

/** Silo's version, from package.json. */
export const SILO_VERSION = found.version;
