/**
 * The artifact folder (`--out`, default `.silo`) is the user's to choose: a folder Silo may not
 * write to (read-only, another user's, a file in the way) is a set-up error that names it and
 * says what to do, never an internal error.
 */
import { SiloError } from './errors.js';

/** Error codes that mean "this place cannot be written", as opposed to a fault of Silo's. */
const REFUSED: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
  ENOTDIR: 'a file is in the way of a folder',
  EEXIST: 'a file is in the way of a folder',
};

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
  // A folder made with its parents is missing only when a link on the way points nowhere.
  const why = typeof e?.code !== 'string' ? undefined : e.code === 'ENOENT' && e.syscall === 'mkdir' ? 'a link on the way points to nothing' : REFUSED[e.code];
  if (why === undefined || e === null) return undefined;
  const at = typeof e.path === 'string' && e.path !== outDir ? ` (${e.code} at ${e.path})` : ` (${e.code})`;
  return new SiloError(
    'SILO_OUT_NOT_WRITABLE',
    `cannot write to ${outDir}: ${why}${at}; give ${option} a ${option === '--out' ? 'folder' : 'file'} you can write to, or fix its permissions`,
    { cause: err },
  );
}
