/**
 * Which process is writing a run or an eval, and whether a recorded one is still there. run.json
 * and summary.json say `running` until their process finishes them; a process that dies before
 * (killed, out of memory) leaves them so. Recording the owner (its pid, its start time, the
 * machine and its boot) lets any later `silo` command tell a run still going from one whose
 * process is gone, and report the second as crashed.
 */
import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import type { Owner } from './types.js';

let self: Owner | undefined;

/** This process, as run.json and summary.json record it. */
export function thisProcess(): Owner {
  if (!self) {
    const boot = readText('/proc/sys/kernel/random/boot_id');
    const since = startTime(process.pid);
    self = { pid: process.pid, host: hostname(), ...(boot ? { boot } : {}), ...(since ? { since } : {}) };
  }
  return self;
}

/**
 * True when `owner` is known to be gone: it ran on this machine and the machine has rebooted
 * since, or its pid is free, or taken by a later process. False when it may still be running, or
 * when that cannot be told (another machine, a record without an owner).
 */
export function ownerGone(owner: Owner | undefined): boolean {
  if (!owner || typeof owner.pid !== 'number' || owner.host !== hostname()) return false;
  const boot = readText('/proc/sys/kernel/random/boot_id');
  if (owner.boot && boot && owner.boot !== boot) return true;
  try {
    process.kill(owner.pid, 0);
  } catch (err) {
    // EPERM: a process of another user has that pid; whether it is the owner is told below.
    if ((err as { code?: unknown }).code === 'ESRCH') return true;
  }
  const since = startTime(owner.pid);
  return owner.since !== undefined && since !== undefined && since !== owner.since;
}

/** Field 22 of /proc/<pid>/stat (after the command's closing parenthesis, which may hold spaces). */
function startTime(pid: number): string | undefined {
  const stat = readText(`/proc/${pid}/stat`);
  return stat?.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}

function readText(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8').trim() || undefined;
  } catch {
    return undefined;
  }
}
