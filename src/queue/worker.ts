/**
 * `silo worker`: takes rollout jobs from the evals listed in Redis and runs each exactly as a
 * local eval would (runRollout on an agent pool: same isolation, limits and artifacts), then sends
 * the artifacts back in the job result. It refuses a job whose task or agent file differs from the
 * coordinator's. BullMQ's lock on a job keeps other workers off it while it runs; if this process
 * dies, the lock lapses and the stalled-job check of another worker gives the job to someone else.
 */
import type { Job, Worker } from 'bullmq';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describeError, SiloError } from '../errors.js';
import { loadTasks, type LoadedTask } from '../load.js';
import { DEFAULT_EVAL_CONCURRENCY, DEFAULT_OUT_DIR, QUEUE_LOCK_MS, QUEUE_MAX_RESULT_BYTES, QUEUE_MAX_STALLS, QUEUE_WATCH_MS } from '../options.js';
import type { AgentRunner, Isolation } from '../pool/pool.js';
import { createRunner } from '../pool/runners.js';
import { runRollout } from '../rollout/rollout.js';
import { agentEnv, parseBuiltinAgent } from '../agents/builtin.js';
import type { RunStatus } from '../types.js';
import { packRun } from './artifacts.js';
import { connectionOptions, probeRedis } from './connection.js';
import { hashFile, JOB_VERSION, QUEUE_PREFIX, underRoot, type RolloutJob, type RolloutJobResult } from './job.js';
import { listedEvals } from './registry.js';

/** Options of runWorker. */
export interface WorkerOptions {
  /** `redis://host:port[/db]`. */
  url: string;
  /** Rollouts at once, per eval served. Default 32. */
  concurrency?: number;
  /** Where agent workers live, as in a local eval: `process` (default) or `thread`. */
  isolation?: Isolation;
  /** Task and agent paths of jobs are resolved under this folder. Default: the working directory. */
  root?: string;
  /** Largest artifacts sent back per run, bytes; larger runs stay here (see packRun). Default 8 MiB. */
  maxResultBytes?: number;
  /** Runs too large to send back are kept in `<outDir>/runs/`. Default `<root>/.silo`. */
  outDir?: string;
  /** BullMQ lock of a job, ms: how long this worker may be silent before its job goes elsewhere. */
  lockMs?: number;
  /** Stops the worker: no new jobs; running rollouts finish and are sent back. */
  signal?: AbortSignal;
  /** What the worker does, for a log. */
  onEvent?: (event: WorkerEvent) => void;
}

/** One line of a worker's log. */
export type WorkerEvent =
  | { type: 'ready'; root: string; worker: string }
  | { type: 'serving'; evalId: string }
  | { type: 'left'; evalId: string }
  | { type: 'run'; evalId: string; taskId: string; trial: number; status: Exclude<RunStatus, 'running'>; durationMs: number }
  | { type: 'refused'; evalId: string; taskId: string; message: string }
  | { type: 'error'; message: string };

interface Served {
  worker: Worker<RolloutJob, RolloutJobResult>;
  /** Aborts the eval's running rollouts (the eval was cancelled). */
  cancel: AbortController;
}

/** Serves the queue until `signal` fires. Rejects at once if Redis cannot be reached. */
export async function runWorker(options: WorkerOptions): Promise<void> {
  const concurrency = options.concurrency ?? DEFAULT_EVAL_CONCURRENCY;
  const maxResultBytes = options.maxResultBytes ?? QUEUE_MAX_RESULT_BYTES;
  const lockMs = options.lockMs ?? QUEUE_LOCK_MS;
  if (!Number.isInteger(concurrency) || concurrency < 1) throw new SiloError('SILO_USAGE', `concurrency must be an integer >= 1 (got ${concurrency})`);
  const root = resolve(options.root ?? process.cwd());
  if (!existsSync(root) || !statSync(root).isDirectory()) throw new SiloError('SILO_USAGE', `--root ${root} is not a folder; give the folder that holds the tasks and agents (the coordinator's working directory)`);
  await probeRedis(options.url);
  const [{ Worker }, { Redis }] = await Promise.all([import('bullmq'), import('ioredis')]);

  const emit = (event: WorkerEvent): void => options.onEvent?.(event);
  const me = `${hostname()}:${process.pid}`;
  const work = mkdtempSync(join(tmpdir(), 'silo-worker-'));
  // Runs too large to send back are kept here, on this machine.
  const keepDir = resolve(options.outDir ?? join(root, DEFAULT_OUT_DIR));
  const client = new Redis(connectionOptions(options.url));
  client.on('error', () => {});
  const served = new Map<string, Served>();
  const pools = new Map<boolean, AgentRunner>();
  const pool = (reuse: boolean): AgentRunner => {
    let p = pools.get(reuse);
    if (!p) pools.set(reuse, (p = createRunner(options.isolation ?? 'process', { maxThreads: concurrency, reuse })));
    return p;
  };
  const hashes = new FileHashes();
  // Keyed by file and hash. Node keeps a module it has imported: restart workers after
  // changing task files (the hash check refuses jobs for files that changed on disk since).
  const loaded = new Map<string, Promise<LoadedTask[]>>();

  const process_ = async (job: Job<RolloutJob, RolloutJobResult>, cancel: AbortSignal): Promise<RolloutJobResult> => {
    const d = job.data;
    const refuse = (message: string): RolloutJobResult => {
      emit({ type: 'refused', evalId: String(d?.evalId), taskId: String(d?.taskId), message });
      return { version: JOB_VERSION, kind: 'refused', message, worker: me };
    };
    if (d?.version !== JOB_VERSION) return refuse(`the job's format (version ${String(d?.version)}) is not this worker's (${JOB_VERSION}); run the same Silo version on every machine`);
    const taskFile = underRoot(root, d.taskFile);
    let builtin: boolean;
    try {
      builtin = typeof d.agent === 'string' && parseBuiltinAgent(d.agent) !== null;
    } catch (err) {
      return refuse(describeError(err));
    }
    const agent = builtin ? d.agent : underRoot(root, d.agent);
    if (!taskFile || !agent || !(d.taskFile in d.hashes) || (!builtin && !(d.agent in d.hashes))) {
      return refuse('the job names files outside the root, or without their hashes');
    }
    // The agent's variables come from this machine's environment, as --env takes them from the shell.
    let env: Record<string, string>;
    try {
      env = agentEnv(d.agent, Array.isArray(d.env) ? d.env.map(String) : [], process.env);
    } catch (err) {
      return refuse(`${describeError(err)} (on this worker: start silo worker with the variable set)`);
    }
    for (const [rel, wanted] of Object.entries(d.hashes)) {
      const file = underRoot(root, rel);
      if (!file || !existsSync(file)) return refuse(`${rel} is missing under ${root}; every machine needs the coordinator's task and agent files under its --root`);
      const here = hashes.of(file);
      if (here !== wanted) {
        return refuse(`${rel} differs from the coordinator's copy (sha256 ${here.slice(0, 12)}… here, ${wanted.slice(0, 12)}… there); every machine needs the same task and agent files under its --root`);
      }
    }
    const key = `${taskFile}#${d.hashes[d.taskFile]}`;
    if (!loaded.has(key)) loaded.set(key, loadTasks([taskFile]));
    let tasks: LoadedTask[];
    try {
      tasks = await loaded.get(key)!;
    } catch (err) {
      loaded.delete(key);
      return refuse(`cannot load ${d.taskFile}: ${describeError(err)}`);
    }
    const found = tasks.find((t) => t.task.id === d.taskId);
    if (!found) return refuse(`${d.taskFile} has no task ${d.taskId} here`);
    try {
      const result = await runRollout({
        task: found.task,
        taskFile,
        agent,
        limits: d.limits,
        env,
        ...(d.agentOptions ? { agentOptions: d.agentOptions } : {}),
        ...(d.strict === true ? { strict: true } : {}),
        // This machine's gateway, with this machine's keys.
        ...(Array.isArray(d.providers) && d.providers.length > 0 ? { providers: d.providers } : {}),
        ...(typeof d.user === 'string' ? { user: d.user } : {}),
        ...(d.solo === true ? { solo: true } : {}),
        outDir: work,
        pool: pool(d.reuseWorkers),
        evalId: d.evalId,
        trial: d.trial,
        signal: cancel,
      });
      const packed = packRun(result, maxResultBytes, keepDir);
      emit({ type: 'run', evalId: d.evalId, taskId: d.taskId, trial: d.trial, status: packed.result.status, durationMs: packed.result.durationMs });
      return { version: JOB_VERSION, kind: 'run', ...packed, worker: me };
    } catch (err) {
      // A set-up error (say an invalid limit) would fail the run on any machine: the coordinator stops the eval.
      if (err instanceof SiloError) return refuse(err.message);
      throw err;
    }
  };

  const serve = (evalId: string): void => {
    const cancel = new AbortController();
    const worker: Worker<RolloutJob, RolloutJobResult> = new Worker<RolloutJob, RolloutJobResult>(evalId, (job) => process_(job, cancel.signal), {
      connection: connectionOptions(options.url),
      prefix: QUEUE_PREFIX,
      concurrency,
      lockDuration: lockMs,
      stalledInterval: Math.max(500, Math.floor(lockMs / 2)),
      maxStalledCount: QUEUE_MAX_STALLS,
    });
    worker.on('error', (err) => emit({ type: 'error', message: `eval ${evalId}: ${describeError(err)}` }));
    served.set(evalId, { worker, cancel });
    emit({ type: 'serving', evalId });
  };
  const leave = async (evalId: string, cancel: boolean): Promise<void> => {
    const s = served.get(evalId);
    if (!s) return;
    served.delete(evalId);
    if (cancel) s.cancel.abort(new Error('the eval was cancelled'));
    // Waits for the running rollouts (cancelled ones end within their grace period).
    await s.worker.close();
    emit({ type: 'left', evalId });
  };

  emit({ type: 'ready', root, worker: me });
  const signal = options.signal;
  try {
    while (!signal?.aborted) {
      try {
        const listed = new Set(await listedEvals(client));
        for (const evalId of listed) if (!served.has(evalId)) serve(evalId);
        // An eval no longer listed ended or was cancelled: what still runs of it is cancelled.
        await Promise.all([...served.keys()].filter((id) => !listed.has(id)).map((id) => leave(id, true)));
      } catch (err) {
        emit({ type: 'error', message: `cannot read the list of evals: ${describeError(err)}` });
      }
      await sleep(QUEUE_WATCH_MS, undefined, signal ? { signal } : {}).catch(() => {});
    }
  } finally {
    await Promise.all([...served.keys()].map((id) => leave(id, false)));
    await Promise.all([...pools.values()].map((p) => p.destroy()));
    client.disconnect();
    rmSync(work, { recursive: true, force: true });
  }
}

/** sha256 of files, recomputed only when a file's size or mtime changes. */
class FileHashes {
  readonly #known = new Map<string, { stamp: string; hash: string }>();
  of(file: string): string {
    const st = statSync(file);
    const stamp = `${st.size}:${st.mtimeMs}`;
    const known = this.#known.get(file);
    if (known?.stamp === stamp) return known.hash;
    const hash = hashFile(file);
    this.#known.set(file, { stamp, hash });
    return hash;
  }
}
