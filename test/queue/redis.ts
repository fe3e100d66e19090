/**
 * A private redis-server for tests: on 127.0.0.1, on a free port, with no persistence, in a
 * temporary folder; stopped (by its own pid) afterwards. And `silo worker` processes to go with it.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { BIN, PLAIN_ENV } from '../cli/silo.js';

export interface TestRedis {
  url: string;
  port: number;
  /** A client for looking inside. */
  client: Redis;
  stop(): Promise<void>;
}

/** A port nobody listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export async function startRedis(): Promise<TestRedis> {
  if (spawnSync('redis-server', ['--version']).error) {
    throw new Error('redis-server is not installed: apt-get install redis-server (.ci/run does this)');
  }
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'silo-redis-'));
  const server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir], { stdio: 'ignore' });
  const client = new Redis({ host: '127.0.0.1', port, lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
  client.on('error', () => {});
  for (let i = 0; ; i++) {
    try {
      await client.connect();
      await client.ping();
      break;
    } catch (err) {
      if (i > 100) throw err;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    client,
    async stop() {
      client.disconnect();
      await new Promise<void>((resolve) => {
        if (server.exitCode !== null) return resolve();
        server.once('exit', () => resolve());
        server.kill('SIGTERM');
      });
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** A `silo worker` process, and its log so far. */
export interface TestWorker {
  process: ChildProcess;
  log(): string;
  /** Resolves when the log from character `since` on matches `re`. */
  waitFor(re: RegExp, since?: number, timeoutMs?: number): Promise<void>;
  /** Ends it (SIGINT unless told otherwise) and waits for it to exit. */
  stop(signal?: NodeJS.Signals): Promise<number | null>;
}

/** `tmp`: the worker's temporary folder (TMPDIR), so that one killed on purpose leaves nothing behind. */
export function startWorker(args: string[], tmp: string, env: Record<string, string> = {}): TestWorker {
  const child = spawn(process.execPath, [BIN, 'worker', ...args], { env: { ...PLAIN_ENV, ...env, TMPDIR: tmp }, stdio: ['ignore', 'ignore', 'pipe'] });
  let log = '';
  const listeners = new Set<() => void>();
  child.stderr!.on('data', (chunk: Buffer) => {
    log += chunk.toString();
    for (const l of listeners) l();
  });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return {
    process: child,
    log: () => log,
    waitFor(re, since = 0, timeoutMs = 120_000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          if (!re.test(log.slice(since))) return;
          listeners.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          listeners.delete(check);
          reject(new Error(`worker log never matched ${re}:\n${log}`));
        }, timeoutMs);
        listeners.add(check);
        check();
      });
    },
    async stop(signal = 'SIGINT') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      return exited;
    },
  };
}
