/**
 * What travels through Redis: one job per attempt at a (task, trial), and what a worker sends
 * back. Paths are relative to the coordinator's root and to each worker's `--root`; content hashes
 * of the task and agent files let a worker refuse to grade code that is not what the coordinator
 * has.
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { SiloError } from '../errors.js';
import type { AgentOptions, Limits, RunResult } from '../types.js';

/** Prefix of every Redis key Silo's queue uses. */
export const QUEUE_PREFIX = 'silo';

/** The sorted set of evals that workers serve (member evalId, score the coordinator's last heartbeat). */
export const REGISTRY_KEY = `${QUEUE_PREFIX}:evals`;

/** Format version of jobs and results; a worker refuses other versions. */
export const JOB_VERSION = 1;

/** The data of one job. */
export interface RolloutJob {
  version: typeof JOB_VERSION;
  evalId: string;
  taskId: string;
  trial: number;
  attempt: number;
  /** The task file, relative to the root (`/`-separated). */
  taskFile: string;
  /** The agent module, relative to the root, or a built-in agent (`openai:<model>`). */
  agent: string;
  /** sha256 (hex) of the task file and of the agent file, keyed by their relative paths. */
  hashes: Record<string, string>;
  limits: Partial<Limits>;
  reuseWorkers: boolean;
  /** Names of the variables the agent gets (`--env`); each worker takes their values from its own environment. */
  env?: string[];
  /** The agent's options (`--max-turns`). */
  agentOptions?: AgentOptions;
  /** `--strict`: an ungrounded answer fails the run. */
  strict?: true;
  /** Providers the agent reaches through the gateway; each worker's own gateway uses its own keys. */
  providers?: ('openai' | 'anthropic')[];
  /** `--user provider:model`: the LLM user, called by each worker with its own keys. */
  user?: string;
  /** `--solo`. */
  solo?: true;
}

/** The artifact files of a run, by name, as text. */
export const ARTIFACT_FILES = ['trace.jsonl', 'state-diff.json', 'result.json', 'run.json'] as const;
/** Files a run has only sometimes: models.jsonl (the agent made model calls through the gateway). */
export const OPTIONAL_ARTIFACT_FILES = ['models.jsonl'] as const;
export type ArtifactFiles = Record<(typeof ARTIFACT_FILES)[number], string> & Partial<Record<(typeof OPTIONAL_ARTIFACT_FILES)[number], string>>;

/** What a worker returns for a job. */
export type RolloutJobResult =
  | {
      version: typeof JOB_VERSION;
      kind: 'run';
      /** The run as runRollout returned it, without the worker's folder. */
      result: Omit<RunResult, 'runDir'>;
      files: ArtifactFiles;
      /** host:pid of the worker. */
      worker: string;
    }
  | {
      version: typeof JOB_VERSION;
      kind: 'refused';
      /** Why this worker would not run the job (its files differ, a file is missing ...). */
      message: string;
      worker: string;
    };

/** The id of an attempt's job: the same pair and attempt always get the same id (enqueueing is idempotent). */
export function jobIdOf(taskId: string, trial: number, attempt: number): string {
  const task = createHash('sha256').update(taskId).digest('hex').slice(0, 20);
  return `t${trial}-a${attempt}-${task}`;
}

/** sha256 of a file's bytes, hex. */
export function hashFile(file: string): string {
  return createHash('sha256').update(readFileSync(file)).digest('hex');
}

/** `file` relative to `root`, `/`-separated; a usage error when it lies outside. */
export function relativeToRoot(root: string, file: string): string {
  const rel = relative(root, file);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) {
    throw new SiloError('SILO_USAGE', `${file} is outside ${root}; with --queue, task and agent files must lie under the folder the coordinator runs in (workers find them under their --root)`);
  }
  return rel.split(sep).join('/');
}

/** A job's relative path under a worker's root, or undefined when it would leave the root. */
export function underRoot(root: string, rel: string): string | undefined {
  if (typeof rel !== 'string' || rel === '' || isAbsolute(rel) || rel.includes('\0')) return undefined;
  const abs = resolve(root, rel);
  const back = relative(root, abs);
  return back === '' || back.startsWith('..') || isAbsolute(back) ? undefined : abs;
}
