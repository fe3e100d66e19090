/**
 * An eval folder belongs to one process at a time: `lock` in the folder names its owner (pid,
 * host, when taken), created exclusively, and its mtime is refreshed while the eval runs. A
 * second process wanting the folder is refused, unless the owner is gone: on the same host a
 * dead pid frees the lock at once; elsewhere (a shared folder) a lock not refreshed for
 * LOCK_STALE_MS is taken over. A crashed owner never leaves an eval stuck.
 */
import { linkSync, readFileSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { SiloError } from '../errors.js';
import { ownerGone, thisProcess } from '../owner.js';
import { makeFolder } from '../out-dir.js';

/** How often the owner refreshes its lock. */
export const LOCK_REFRESH_MS = 5_000;
/** A lock of another host not refreshed for this long is taken to be abandoned. */
export const LOCK_STALE_MS = 60_000;

/** What a lock file holds. */
interface Owner {
  pid: number;
  host: string;
  /** When the lock was taken (ISO time). */
  since: string;
  /** The owner's start time and the machine's boot (see src/owner.ts): tell a reused pid apart. */
  started?: string;
  boot?: string;
}

/** A held lock. */
export interface EvalLock {
  /** Gives the folder up (idempotent). */
  release(): void;
}

/**
 * Takes the lock of the eval folder `dir` (created if missing). Throws a usage error naming the
 * eval and its owner when a live process holds it.
 */
export function lockEval(dir: string, evalId: string): EvalLock {
  makeFolder(dir);
  const file = join(dir, 'lock');
  const self = thisProcess();
  const me: Owner = { pid: self.pid, host: self.host, since: new Date().toISOString(), ...(self.since ? { started: self.since } : {}), ...(self.boot ? { boot: self.boot } : {}) };
  const text = `${JSON.stringify(me)}\n`;
  for (let attempt = 0; ; attempt++) {
    if (take(file, text)) break;
    const owner = readOwner(file);
    // A lock that cannot be read is trusted until it goes stale.
    if (attempt >= 3 || (owner ? isAlive(owner, file) : touchedRecently(file))) {
      const who = owner ? `pid ${owner.pid} on ${owner.host}, since ${owner.since}` : `see ${file}`;
      throw new SiloError('SILO_USAGE', `eval ${evalId} is being run by another process (${who}); wait for it to finish, stop it, or choose another --eval-id`);
    }
    // The owner is gone: move its lock aside (one taker wins the rename), then try again. If what
    // was moved is not the dead owner's lock (another process took it over meanwhile), put it back.
    const aside = `${file}.stale.${process.pid}`;
    try {
      renameSync(file, aside);
      const moved = readOwner(aside);
      if (moved && owner && (moved.pid !== owner.pid || moved.host !== owner.host)) take(file, readFileSync(aside, 'utf8'));
      rmSync(aside, { force: true });
    } catch {
      // another process moved it first; the next attempt sees what is there now
    }
  }
  const timer = setInterval(() => {
    try {
      const now = new Date();
      utimesSync(file, now, now);
    } catch {
      // the folder went away; nothing to keep
    }
  }, LOCK_REFRESH_MS);
  timer.unref();
  let released = false;
  return {
    release() {
      if (released) return;
      released = true;
      clearInterval(timer);
      // Only our own lock is removed (a stale-lock takeover may have replaced it).
      if (readOwner(file)?.pid === me.pid && readOwner(file)?.host === me.host) rmSync(file, { force: true });
    },
  };
}

/** Whether the eval folder `dir` is held by a live process (for `silo ls`). */
export function evalLocked(dir: string): boolean {
  const file = join(dir, 'lock');
  const owner = readOwner(file);
  return owner !== undefined && isAlive(owner, file);
}

/** Creates `file` holding `text`, whole, unless it exists (a link is atomic and exclusive). */
function take(file: string, text: string): boolean {
  const temp = `${file}.${process.pid}.tmp`;
  writeFileSync(temp, text);
  try {
    linkSync(temp, file);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') return false;
    throw err;
  } finally {
    rmSync(temp, { force: true });
  }
}

function readOwner(file: string): Owner | undefined {
  try {
    const owner = JSON.parse(readFileSync(file, 'utf8')) as Partial<Owner>;
    if (typeof owner.pid !== 'number' || typeof owner.host !== 'string') return undefined;
    return {
      pid: owner.pid,
      host: owner.host,
      since: String(owner.since ?? '?'),
      ...(typeof owner.started === 'string' ? { started: owner.started } : {}),
      ...(typeof owner.boot === 'string' ? { boot: owner.boot } : {}),
    };
  } catch {
    return undefined;
  }
}

/** On this host, whether its process is still there (src/owner.ts); elsewhere, whether it refreshes the lock. */
function isAlive(owner: Owner, file: string): boolean {
  if (owner.host !== hostname()) return touchedRecently(file);
  return !ownerGone({ pid: owner.pid, host: owner.host, ...(owner.started ? { since: owner.started } : {}), ...(owner.boot ? { boot: owner.boot } : {}) });
}

function touchedRecently(file: string): boolean {
  try {
    return Date.now() - statSync(file).mtimeMs < LOCK_STALE_MS;
  } catch {
    return false;
  }
}
