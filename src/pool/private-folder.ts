/**
 * The private folder where Silo keeps what it compiles, once per version, for later commands:
 * compiled agents (compile.ts), and in folders of their own compiled task files
 * (task-compile.ts) and the code of tool validators (rollout/validators.ts). It is
 * this user's alone, since what is in it gets run: a folder another user made, or can write to,
 * is refused. Files not written for a month are cleared out, once a day.
 */
import { lstatSync, mkdirSync, readdirSync, renameSync, statSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { randomInt } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SiloError } from '../errors.js';

/** Where the private folder is (whether it exists or not). */
export function privateFolderPath(): string {
  // Asked once a rollout: os.tmpdir() takes ~20 µs on Node 20, the variables it reads ~0.1 µs each.
  const { TMPDIR, TMP, TEMP } = process.env;
  const uid = process.getuid?.() ?? 'user';
  const key = `${TMPDIR}\0${TMP}\0${TEMP}\0${uid}`;
  if (folderPath?.key !== key) folderPath = { key, path: join(tmpdir(), `silo-agents-${uid}`) };
  return folderPath.path;
}
let folderPath: { key: string; path: string } | undefined;

/** The private folder (made if missing). */
export function privateFolder(): string {
  const dir = privateFolderPath();
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  // Another user of this machine must not have made (or be able to write) the folder agents load from.
  const folder = lstatSync(dir);
  if (!folder.isDirectory() || (process.getuid && folder.uid !== process.getuid()) || (folder.mode & 0o022) !== 0) {
    throw new SiloError('SILO_AGENT_LOAD_FAILED', `${dir} (where compiled agents are kept) is not a private folder of this user; remove it or set TMPDIR elsewhere`);
  }
  if (!pruned) {
    pruned = true;
    pruneDaily(dir, Date.now());
  }
  return dir;
}

/** The parts of the private folder that are not compiled agents' (no agent's worker is ever granted a file in them). */
const SUBFOLDERS = ['tasks', 'validators'] as const;

/**
 * A folder of the private folder's own (made if missing): `tasks` for compiled task files (they
 * hold what agents must never read: the verifiers and their data), `validators` for tool
 * validators' code. Files in them are removed as compiled agents are.
 */
export function privateSubfolder(name: (typeof SUBFOLDERS)[number]): string {
  const dir = join(privateFolderPath(), name);
  // (checked and made once a process: validators ask for theirs once per tool schema)
  if (madeSubfolders.has(dir)) return dir;
  mkdirSync(join(privateFolder(), name), { recursive: true, mode: 0o700 });
  madeSubfolders.add(dir);
  return dir;
}

/** The subfolders this process has made (or found) already, by path. */
const madeSubfolders = new Set<string>();

/** Whether this process has looked at clearing out old compiled agents yet (once is enough). */
let pruned = false;

/** How often the compile folder is cleared out (a stamp file in it says when it last was). */
const PRUNE_EVERY_MS = 24 * 3600 * 1000;

/**
 * Clears out the folder once a day, not on every command: looking at each of its files (thousands
 * after a while) took longer than the rest of preparing a compiled agent for its rollout.
 */
function pruneDaily(dir: string, now: number): void {
  const stamp = join(dir, '.pruned');
  try {
    if (now - statSync(stamp).mtimeMs < PRUNE_EVERY_MS) return;
  } catch {
    // never pruned (or the stamp is gone): now
  }
  pruneCompiledAgents(dir, now);
  for (const name of SUBFOLDERS) pruneCompiledAgents(join(dir, name), now);
  try {
    writeFileSync(stamp, '');
    const at = new Date(now);
    utimesSync(stamp, at, at);
  } catch {
    // pruned again next time
  }
}

/** Compiled agents not written for this long are removed (every edit of an agent leaves one). */
export const COMPILED_AGENT_MAX_AGE_MS = 30 * 24 * 3600 * 1000;

/**
 * Removes compiled agents (and half-written ones) last written more than COMPILED_AGENT_MAX_AGE_MS
 * before `now`. A compile rewrites its file even when it exists, so an agent in use stays young.
 * Best effort: what cannot be looked at or removed is left.
 */
export function pruneCompiledAgents(dir: string, now: number): void {
  let names: string[];
  try {
    names = readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    if (!/\.(mjs|cjs|cjs\.cache|mjs\.map|cjs\.map|prepared\.json)(\.\d+\.tmp)?$/.test(name)) continue;
    try {
      const file = join(dir, name);
      if (now - lstatSync(file).mtimeMs > COMPILED_AGENT_MAX_AGE_MS) unlinkSync(file);
    } catch {
      // gone already, or not ours to remove
    }
  }
}

/** Temporary files written so far (their names must differ between processes that share the folder, PIDs too). */
let temporaries = 0;

/** Writes a file of the folder whole or not at all (a temporary name, then a rename). */
export function writeAtomically(file: string, data: string | Uint8Array): void {
  const tmp = `${file}.${process.pid}${String(++temporaries).padStart(4, '0')}${randomInt(1e6)}.tmp`;
  writeFileSync(tmp, data);
  renameSync(tmp, file);
}

/**
 * What a manifest records of a file: its size, modification time, inode (another file under the
 * same name differs) and change time (a file copied over it with its size and times kept differs).
 */
export type Stamp = [size: number, mtimeMs: number, ino: number, ctimeMs: number];

/**
 * A file's stamp, or null when it is gone. A folder's is its inode alone (a link pointed at another
 * folder is a change; what is in it is recorded name by name, by whoever reads it).
 */
export function stamp(file: string): Stamp | null {
  try {
    const st = statSync(file);
    return st.isDirectory() ? [-2, 0, st.ino, 0] : [st.size, st.mtimeMs, st.ino, st.ctimeMs];
  } catch {
    return null;
  }
}

/** The stamps of the files there are (what a manifest records of what a compile read). */
export function stamps(files: Iterable<string>): [string, ...Stamp][] {
  return [...files].flatMap((file): [string, ...Stamp][] => {
    const st = stamp(file);
    return st ? [[file, ...st]] : [];
  });
}

/** How a manifest records a file that was not there (and must still not be). */
export const ABSENT: Stamp = [-1, 0, 0, 0];

/**
 * Whether every file a manifest recorded is still there, and the same file, unchanged (and every
 * one recorded ABSENT still absent).
 */
export function unchanged(inputs: readonly (readonly [string, ...Stamp])[]): boolean {
  for (const [file, size, mtime, ino, ctime] of inputs) {
    const now = stamp(file);
    if (size === ABSENT[0]) {
      if (now !== null) return false;
    } else if (now === null || now[0] !== size || now[1] !== mtime || now[2] !== ino || now[3] !== ctime) return false;
  }
  return true;
}
