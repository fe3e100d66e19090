/**
 * The artifact folder (`--out`, default `.silo`) is the user's to choose: a folder Silo may not
 * write to (read-only, another user's, a file in the way) is a set-up error that names it and
 * says what to do, never an internal error.
 */
import { lstatSync, mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { SiloError } from './errors.js';

/** Error codes that mean "this place cannot be written", as opposed to a fault of Silo's. */
const REFUSED: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
  ENOTDIR: 'a file is in the way of a folder',
  EEXIST: 'a file is in the way of a folder',
  ELOOP: 'the links on the way go round in a loop',
};

/** A folder makeFolder could not make, with the reason the error code alone would not give. */
class FolderRefused extends Error {
  readonly syscall = 'mkdir';
  constructor(
    readonly code: string,
    readonly path: string,
    readonly why: string,
  ) {
    super(`${code}: ${why}, mkdir '${path}'`);
  }
}

/**
 * Makes `dir` and the folders missing on the way to it, one level at a time. Not Node's
 * `mkdirSync(dir, { recursive: true })`: where a file system refuses new folders without a reason
 * (under /proc, mkdir says ENOENT of a folder whose parent is there), it tries again forever, a hang
 * that not even Ctrl-C ends. Level by level, each refusal is an error naming its level. The usual
 * case (the parent is there) costs one mkdir, as the recursive one did.
 */
export function makeFolder(dir: string): void {
  const path = resolve(dir);
  for (let attempt = 0; ; attempt++) {
    try {
      mkdirSync(path);
      return;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'EEXIST') {
        // (a folder, or a link to one: made by another process meanwhile, or there all along)
        if (statSync(path, { throwIfNoEntry: false })?.isDirectory()) return;
        if (lstatSync(path).isSymbolicLink()) throw new FolderRefused('ENOENT', path, 'a link on the way points to nothing');
        throw err;
      }
      if (code !== 'ENOENT') throw err;
      const parent = dirname(path);
      // The parent is there, and still no folder after a few tries (one more than another process
      // making the parent meanwhile needs): a file system that makes none.
      if (attempt >= 2 || parent === path) throw new FolderRefused('ENOENT', path, 'no folder can be made there');
      if (statSync(parent, { throwIfNoEntry: false }) === undefined) makeFolder(parent);
    }
  }
}

/**
 * Runs `work` (which writes under `outDir`), turning a refused write into a SiloError
 * (`SILO_OUT_NOT_WRITABLE`, exit 2) that names the folder and the option that chose it.
 */
export async function outDirAccess<T>(outDir: string, work: () => T | Promise<T>, option = '--out'): Promise<T> {
  try {
    return await work();
  } catch (err) {
    throw outDirError(err, outDir, option) ?? err;
  }
}

/** The SiloError for a refused write under `outDir`, or undefined when `err` is something else. */
export function outDirError(err: unknown, outDir: string, option = '--out'): SiloError | undefined {
  const e = err as NodeJS.ErrnoException | null;
  const why = err instanceof FolderRefused ? err.why : typeof e?.code === 'string' ? REFUSED[e.code] : undefined;
  if (why === undefined || e === null) return undefined;
  const at = typeof e.path === 'string' && e.path !== outDir ? ` (${e.code} at ${e.path})` : ` (${e.code})`;
  return new SiloError(
    'SILO_OUT_NOT_WRITABLE',
    `cannot write to ${outDir}: ${why}${at}; give ${option} a ${option === '--output' ? 'file' : 'folder'} you can write to, or fix its permissions`,
    { cause: err },
  );
}
