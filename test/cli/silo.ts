/** Runs the built `silo` binary in a child process, as a user would, with colours off. */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';

export interface Ran {
  /** The exit code; null when the process was killed by a signal. */
  code: number | null;
  stdout: string;
  stderr: string;
}

/** What `silo` runs once installed: package.json's `bin` (the bundle under dist/, relative to the repository). */
export const BIN = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { bin: { silo: string } }).bin.silo;
export const PLAIN_ENV = { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' };

/**
 * `env` is added to a colourless copy of this process's environment. The process is sent
 * `killSignal` after `timeoutMs` (SIGKILL for one that may be stuck where no signal handler runs).
 */
export function runSilo(args: string[], env: Record<string, string> = {}, { timeoutMs = 150_000, killSignal = 'SIGTERM' as NodeJS.Signals } = {}): Promise<Ran> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { env: { ...PLAIN_ENV, ...env }, timeout: timeoutMs, killSignal }, (err, stdout, stderr) => {
      const code = err ? (typeof err.code === 'number' ? err.code : null) : 0;
      resolve({ code, stdout, stderr });
    });
  });
}
