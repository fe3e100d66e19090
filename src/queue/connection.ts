/**
 * Redis for the queue (ioredis and BullMQ are imported only when a queue is used: loading them
 * takes a good part of a second, which no other command should pay). Redis for the queue: `--queue redis://[user:password@]host:port[/db]` (or `rediss://` for TLS)
 * turned into connection options, and a probe that fails fast with one line when Redis cannot
 * be reached (ioredis on its own would retry for ever).
 */
import type { RedisOptions } from 'ioredis';
import { describeError, SiloError } from '../errors.js';
import { QUEUE_CONNECT_TIMEOUT_MS } from '../options.js';
import { requireOptional } from '../optional.js';

/** Connection options of a queue URL. */
export function connectionOptions(url: string): RedisOptions {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    throw new SiloError('SILO_USAGE', `--queue takes a Redis URL such as redis://127.0.0.1:6379 (got '${url}')`);
  }
  if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') {
    throw new SiloError('SILO_USAGE', `--queue takes a redis:// or rediss:// URL (got '${url}')`);
  }
  const db = parsed.pathname.replace(/^\//, '');
  if (db !== '' && !/^\d+$/.test(db)) throw new SiloError('SILO_USAGE', `the database in --queue ${url} must be a number, as in redis://host:6379/2`);
  return {
    host: parsed.hostname === '' ? '127.0.0.1' : parsed.hostname.replace(/^\[|\]$/g, ''),
    port: parsed.port === '' ? 6379 : Number(parsed.port),
    ...(db === '' ? {} : { db: Number(db) }),
    ...(parsed.username ? { username: decodeURIComponent(parsed.username) } : {}),
    ...(parsed.password ? { password: decodeURIComponent(parsed.password) } : {}),
    ...(parsed.protocol === 'rediss:' ? { tls: {} } : {}),
    // BullMQ's workers block on Redis and must never give up a command.
    maxRetriesPerRequest: null,
  };
}

/** Where a URL points, without its password (for messages). */
export function showUrl(url: string): string {
  try {
    const parsed = new URL(url);
    parsed.password = '';
    return parsed.toString();
  } catch {
    return url;
  }
}

/** Connects to the queue's Redis once; a one-line SiloError if it cannot be reached. */
export async function probeRedis(url: string): Promise<void> {
  requireOptional('queue');
  const options = connectionOptions(url);
  const { Redis } = await import('ioredis');
  const client = new Redis({
    ...options,
    lazyConnect: true,
    connectTimeout: QUEUE_CONNECT_TIMEOUT_MS,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null,
  });
  // The socket's error says why (ECONNREFUSED ...); the rejection only says the connection closed.
  let cause: unknown;
  client.on('error', (err) => {
    cause ??= err;
  });
  try {
    await client.connect();
    await client.ping();
  } catch (err) {
    const why = describeError(cause ?? err).replace(/\.$/, '');
    throw new SiloError('SILO_QUEUE_UNAVAILABLE', `cannot reach Redis at ${showUrl(url)} (${why}); start redis-server there or fix --queue`);
  } finally {
    client.disconnect();
  }
}
