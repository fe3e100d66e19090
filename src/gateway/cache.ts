/**
 * The model cache (`--model-cache DIR`): a response stored under a key made of the provider, the
 * endpoint, the request body in canonical form, the task, the trial and the occurrence of that
 * same request within the rollout, and replayed when the same key comes again. So k trials still
 * sample k answers, a rerun of trial 2 replays trial 2's, and an agent that asks the same
 * question twice in a rollout gets both answers back in order.
 *
 * An entry is one file, `DIR/<2 hex>/<sha256>.json`, written to a temporary name and renamed, so
 * a reader sees a whole entry or none, and concurrent writers of one key never tear it (the last
 * rename wins; each wrote a whole entry). An entry that does not parse, is of another version, or
 * whose checksum does not match its content (cut short, edited) is a miss, never a crash.
 */
import { createHash, randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { readFile, rename, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { SiloError } from '../errors.js';
import { makeFolder } from '../out-dir.js';
import type { Endpoint, Provider } from './providers.js';
import type { TokenCounts } from './usage.js';

/** `read`: replay only (a miss goes upstream and is not stored); `write`: store only; `readwrite` both. */
export type CacheMode = 'read' | 'write' | 'readwrite';
export const CACHE_MODES: readonly CacheMode[] = ['read', 'write', 'readwrite'];

/** Who made a model request: the agent (through the gateway) or Silo on the host (a simulated user). */
export type Actor = 'agent' | 'user';

/** What a cached response is stored under. */
export interface CacheKey {
  actor: Actor;
  provider: Provider;
  endpoint: Endpoint;
  /** The path upstream (`/models/<id>` differs from `/models`). */
  path: string;
  /** The request body as sent (parsed JSON), or null. */
  body: unknown;
  taskId: string | null;
  trial: number | null;
  /** 0 for the first time this request (actor, provider, path, body) is made in the rollout, 1 the second ... */
  occurrence: number;
}

/** A response as stored and replayed. */
export interface CachedResponse {
  status: number;
  contentType: string | null;
  /** The body as the agent received it (JSON text, or a stream's events). */
  body: string;
  usage: TokenCounts | null;
}

const ENTRY_VERSION = 1;

/** JSON with every object's keys sorted, so equal values have one text. */
export function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return v;
    const sorted: Record<string, unknown> = {};
    for (const k of Object.keys(v).sort()) sorted[k] = (v as Record<string, unknown>)[k];
    return sorted;
  }) ?? 'null';
}

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** The request's identity within a rollout, without its occurrence (what occurrences are counted by). */
export function requestIdentity(key: Omit<CacheKey, 'taskId' | 'trial' | 'occurrence'>): string {
  return sha256(canonicalJson({ actor: key.actor, provider: key.provider, endpoint: key.endpoint, path: key.path, body: key.body }));
}

/** The cache key's hash (the entry's file name). */
export function cacheKeyHash(key: CacheKey): string {
  return sha256(canonicalJson({ v: ENTRY_VERSION, ...key }));
}

/** A folder of cached model responses. */
export class ModelCache {
  readonly dir: string;
  readonly mode: CacheMode;

  constructor(dir: string, mode: CacheMode = 'readwrite') {
    if (typeof dir !== 'string' || dir === '') throw new SiloError('SILO_USAGE', 'modelCache needs a folder');
    if (!CACHE_MODES.includes(mode)) throw new SiloError('SILO_USAGE', `model cache mode must be ${CACHE_MODES.join(', ')} (got ${JSON.stringify(mode)})`);
    // Read only: a folder that is not there holds nothing to replay (a typo, most likely), and
    // every request would go to the model unnoticed.
    if (mode === 'read' && !isFolder(dir)) {
      throw new SiloError('SILO_USAGE', `the model cache ${dir} is not a folder: mode read replays a cache written before (fill one with --model-cache-mode readwrite or write)`);
    }
    this.dir = dir;
    this.mode = mode;
  }

  /** Whether responses are replayed from the cache. */
  get reads(): boolean {
    return this.mode !== 'write';
  }

  /** Whether responses from upstream are stored. */
  get writes(): boolean {
    return this.mode !== 'read';
  }

  #file(hash: string): string {
    return join(this.dir, hash.slice(0, 2), `${hash}.json`);
  }

  /** The response stored under `hash`, or null (none, or an entry that is not whole). Never rejects. */
  async get(hash: string): Promise<CachedResponse | null> {
    let text: string;
    try {
      text = await readFile(this.#file(hash), 'utf8');
    } catch {
      return null;
    }
    try {
      const entry = JSON.parse(text) as { version?: unknown; sha256?: unknown; response?: unknown };
      if (entry.version !== ENTRY_VERSION || typeof entry.sha256 !== 'string') return null;
      const r = entry.response as Partial<CachedResponse> | undefined;
      if (!r || typeof r.status !== 'number' || typeof r.body !== 'string' || sha256(JSON.stringify(r)) !== entry.sha256) return null;
      const usage = r.usage && typeof r.usage.inputTokens === 'number' && typeof r.usage.outputTokens === 'number' ? { inputTokens: r.usage.inputTokens, outputTokens: r.usage.outputTokens } : null;
      return { status: r.status, contentType: typeof r.contentType === 'string' ? r.contentType : null, body: r.body, usage };
    } catch {
      return null;
    }
  }

  /** Stores `response` under `hash` (whole or not at all). Never rejects: a cache that cannot be written is skipped. */
  async put(hash: string, key: CacheKey, response: CachedResponse): Promise<boolean> {
    const file = this.#file(hash);
    const tmp = `${file}.${process.pid}.${randomBytes(6).toString('hex')}.tmp`;
    const stored: CachedResponse = { status: response.status, contentType: response.contentType, body: response.body, usage: response.usage };
    const about = { provider: key.provider, endpoint: key.endpoint, actor: key.actor, taskId: key.taskId, trial: key.trial, occurrence: key.occurrence, model: modelOf(key.body) };
    const text = JSON.stringify({ version: ENTRY_VERSION, key: about, storedAt: new Date().toISOString(), sha256: sha256(JSON.stringify(stored)), response: stored });
    try {
      makeFolder(join(this.dir, hash.slice(0, 2)));
      await writeFile(tmp, text);
      await rename(tmp, file);
      return true;
    } catch {
      await unlink(tmp).catch(() => {});
      return false;
    }
  }
}

/** Whether `path` is a folder (false for anything in the way: not there, a file, no permission to look). */
function isFolder(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

function modelOf(body: unknown): string | null {
  const model = (body as { model?: unknown } | null)?.model;
  return typeof model === 'string' ? model : null;
}
