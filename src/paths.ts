/** Where Silo's own files are, whether it runs built (dist/) or from source (tests). */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

function findRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(join(dir, 'package.json')) && existsSync(join(dir, 'workers'))) return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('cannot find the silo package root');
    dir = parent;
  }
}

/** The package root (holds package.json). */
export const PACKAGE_ROOT = findRoot();

/** The built worker entry; workers always run built JavaScript, never TypeScript sources. */
export const WORKER_ENTRY = join(PACKAGE_ROOT, 'dist', 'workers', 'agent.cjs');

/** Silo's version, from package.json. */
export const SILO_VERSION = (JSON.parse(readFileSync(join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
