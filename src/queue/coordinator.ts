/**
 * `silo eval --queue redis://...`: the eval runs as usual in this process (scheduling, retries,
 * statistics, the store, progress), but each attempt at a (task, trial) becomes a BullMQ job on
 * the queue named after the evalId, run by `silo worker` processes wherever they are. This
 * runner enqueues the job, waits for its result, and writes the artifacts it carries.
 *
 * Finished jobs are collected by polling the queue's completed and failed lists, not through its
 * event stream: a result read from the job itself cannot be missed, however long a result took
 * or however far the stream was trimmed. A collected job is removed from Redis once its files are
 * written; a job finished while no coordinator was listening stays until `--resume` collects it.
 */
import type { Job, Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { setTimeout as sleep } from 'node:timers/promises';
import { SiloError } from '../errors.js';
import { parseBuiltinAgent } from '../agents/builtin.js';
import type { RolloutRequest, RolloutRunner, RunnerContext, RunnerFactory } from '../eval/runner.js';
import { QUEUE_CANCEL_WAIT_MS, QUEUE_HEARTBEAT_MS, QUEUE_POLL_MS, QUEUE_WATCH_MS } from '../options.js';
import type { RunResult } from '../types.js';
import { lostRun, writeRunFiles } from './artifacts.js';
import { connectionOptions, probeRedis } from './connection.js';
import { hashFile, JOB_VERSION, jobIdOf, QUEUE_PREFIX, relativeToRoot, type RolloutJob, type RolloutJobResult } from './job.js';
import { announceEval, withdrawEval } from './registry.js';
import { requireOptional } from '../optional.js';

/** Options of the queue runner. */
export interface QueueOptions {
  /** `redis://host:port[/db]`. */
  url: string;
  /** Task and agent paths in jobs are relative to this folder. Default: the working directory. */
  root?: string;
}

interface Waiter {
  jobId: string;
  taskId: string;
  resolve: (results: RunResult[]) => void;
  reject: (error: unknown) => void;
}

/** The runner of an eval whose rollouts run on queue workers. */
export function queueRunner(options: QueueOptions): RunnerFactory {
  // Before the eval starts: a missing bullmq is a usage error, not a failed eval.
  requireOptional('queue');
  return async (context) => {
    const root = options.root ?? process.cwd();
    // A built-in agent (openai:<model>) is part of Silo, not a file of the eval's.
    const builtin = parseBuiltinAgent(context.record.agent) !== null;
    const files = builtin ? [...context.record.taskFiles] : [...context.record.taskFiles, context.record.agent];
    const relative = new Map(files.map((file) => [file, relativeToRoot(root, file)]));
    // Hashed once, when the eval starts: a copy edited during the eval no longer matches.
    const hashes = new Map(files.map((file) => [relative.get(file)!, hashFile(file)]));
    await probeRedis(options.url);
    const [{ Queue }, { Redis }] = await Promise.all([import('bullmq'), import('ioredis')]);
    const client = new Redis(connectionOptions(options.url));
    client.on('error', () => {});
    const queue = new Queue(context.evalId, {
      connection: connectionOptions(options.url),
      prefix: QUEUE_PREFIX,
      // Results are read from the jobs; the event stream only needs to stay small.
      streams: { events: { maxLen: 100 } },
      defaultJobOptions: { attempts: 1, removeOnComplete: false, removeOnFail: false },
    });
    queue.on('error', () => {});
    return new QueueCoordinator(context, queue, client, (file) => relative.get(file)!, hashes);
  };
}

class QueueCoordinator implements RolloutRunner {
  readonly slots: number;
  readonly #context: RunnerContext;
  readonly #queue: Queue;
  readonly #client: Redis;
  readonly #relative: (file: string) => string;
  readonly #hashes: Map<string, string>;
  readonly #waiters = new Map<string, Waiter>();
  #withdrawnAt: number | undefined;
  #closed = false;
  #loop: Promise<void>;

  constructor(context: RunnerContext, queue: Queue, client: Redis, relative: (file: string) => string, hashes: Map<string, string>) {
    this.#context = context;
    this.#queue = queue;
    this.#client = client;
    // Every pair can wait on the queue at once: the workers' --concurrency sets the pace.
    this.slots = context.concurrency ?? Number.MAX_SAFE_INTEGER;
    this.#relative = relative;
    this.#hashes = hashes;
    this.#loop = this.#collect();
  }

  async run({ loaded, trial, attempt }: RolloutRequest): Promise<RunResult[]> {
    if (this.#withdrawnAt !== undefined) return [];
    const { record, evalId } = this.#context;
    const taskFile = this.#relative(loaded.file);
    const builtin = parseBuiltinAgent(record.agent) !== null;
    const agent = builtin ? record.agent : this.#relative(record.agent);
    const data: RolloutJob = {
      version: JOB_VERSION,
      evalId,
      taskId: loaded.task.id,
      trial,
      attempt,
      taskFile,
      agent,
      hashes: builtin ? { [taskFile]: this.#hashes.get(taskFile)! } : { [taskFile]: this.#hashes.get(taskFile)!, [agent]: this.#hashes.get(agent)! },
      limits: record.limits,
      reuseWorkers: record.reuseWorkers,
      ...(record.env && record.env.length > 0 ? { env: record.env } : {}),
      ...(record.agentOptions ? { agentOptions: record.agentOptions } : {}),
      ...(record.strict ? { strict: true as const } : {}),
      ...(record.providers && record.providers.length > 0 ? { providers: record.providers } : {}),
      ...(record.user === undefined ? {} : { user: record.user }),
      ...(record.solo ? { solo: true as const } : {}),
    };
    const jobId = jobIdOf(loaded.task.id, trial, attempt);
    const done = new Promise<RunResult[]>((resolve, reject) => this.#waiters.set(jobId, { jobId, taskId: loaded.task.id, resolve, reject }));
    // A job of that id already in Redis (a resumed eval) is kept as it is, finished or not.
    try {
      await this.#queue.add(loaded.task.id, data, { jobId });
    } catch (error) {
      this.#waiters.delete(jobId);
      throw error;
    }
    return done;
  }

  async withdraw(): Promise<void> {
    if (this.#withdrawnAt !== undefined) return;
    this.#withdrawnAt = Date.now();
    // Jobs no worker has taken go; the workers stop the eval's running rollouts, which come
    // back as cancelled runs.
    await this.#queue.drain(true);
    await withdrawEval(this.#client, this.#context.evalId);
  }

  async close(finished: boolean): Promise<void> {
    this.#closed = true;
    await this.#loop;
    try {
      await withdrawEval(this.#client, this.#context.evalId);
      // A finished eval leaves nothing in Redis; an unfinished one keeps its queue for --resume.
      if (finished) {
        await this.#workersGone();
        await this.#queue.obliterate({ force: true });
      }
    } finally {
      await this.#queue.close();
      this.#client.disconnect();
    }
  }

  /**
   * Waits (a few seconds at most) for the workers to leave the withdrawn eval: an idle worker still
   * on the queue writes to it (its stalled-job check, a "drained" event), which would outlive the
   * queue's removal.
   */
  async #workersGone(): Promise<void> {
    const until = Date.now() + 3 * QUEUE_WATCH_MS;
    while (Date.now() < until) {
      // Counting them needs CLIENT LIST, which some hosted Redis deny: then do not wait.
      const count = await this.#queue.getWorkersCount().catch(() => 0);
      if (count === 0) return;
      await sleep(QUEUE_POLL_MS / 2);
    }
  }

  /** Announces the eval, then collects finished jobs until the runner is closed. */
  async #collect(): Promise<void> {
    let heartbeat = 0;
    while (!this.#closed) {
      try {
        if (this.#withdrawnAt === undefined && Date.now() - heartbeat >= QUEUE_HEARTBEAT_MS) {
          heartbeat = Date.now();
          await announceEval(this.#client, this.#context.evalId);
        }
        if (this.#waiters.size > 0) await this.#sweep();
      } catch (error) {
        for (const waiter of this.#waiters.values()) waiter.reject(error);
        this.#waiters.clear();
      }
      await sleep(QUEUE_POLL_MS);
    }
  }

  async #sweep(): Promise<void> {
    for (const job of await this.#finishedJobs()) {
      const waiter = job.id === undefined ? undefined : this.#waiters.get(job.id);
      if (!waiter) continue;
      this.#waiters.delete(waiter.jobId);
      try {
        waiter.resolve(jobResults(job, waiter.taskId, this.#context.outDir));
        // Removed only once its files are on disk; a crash before this leaves it for --resume.
        await job.remove();
      } catch (error) {
        waiter.reject(error);
      }
    }
    if (this.#withdrawnAt === undefined) return;
    // Withdrawn: jobs nobody took are gone; running ones are given a while to come back cancelled.
    const late = Date.now() - this.#withdrawnAt > QUEUE_CANCEL_WAIT_MS;
    for (const waiter of [...this.#waiters.values()]) {
      const state = await this.#queue.getJobState(waiter.jobId);
      if (state === 'completed' || state === 'failed') continue;
      if (state === 'active' && !late) continue;
      if (state !== 'active') await this.#queue.remove(waiter.jobId).catch(() => 0);
      this.#waiters.delete(waiter.jobId);
      waiter.resolve([]);
    }
  }

  /** Every completed and failed job, a page at a time (jobs no one waits for, left by an earlier coordinator, included). */
  async #finishedJobs(): Promise<Job<RolloutJob, RolloutJobResult>[]> {
    const page = 200;
    const jobs: Job<RolloutJob, RolloutJobResult>[] = [];
    for (const type of ['completed', 'failed'] as const) {
      for (let start = 0; ; start += page) {
        const batch = (await this.#queue.getJobs(type, start, start + page - 1, true)) as Job<RolloutJob, RolloutJobResult>[];
        jobs.push(...batch);
        if (batch.length < page) break;
      }
    }
    return jobs;
  }
}

/** The parts of a finished BullMQ job that say what became of it. */
export interface FinishedJob {
  id?: string | undefined;
  returnvalue: RolloutJobResult;
  failedReason: string;
  finishedOn?: number | undefined;
  stalledCounter: number;
}

/**
 * The runs a finished job stands for, its artifacts written under `outDir`: one lost run per stall
 * (retries), then its own. A refusal is a set-up error that stops the eval.
 */
export function jobResults(job: FinishedJob, taskId: string, outDir: string): RunResult[] {
  const failed = job.finishedOn !== undefined && job.failedReason !== undefined && job.returnvalue == null;
  // A job that stalled once too often fails with that stall: it is the final loss, not a retry.
  const stalls = (job.stalledCounter ?? 0) - (failed && /stalled more than allowable limit/.test(job.failedReason) ? 1 : 0);
  const lost = Array.from({ length: Math.max(0, stalls) }, () =>
    lostRun(taskId, 'the worker running this rollout stopped answering (killed, or cut off from Redis); its job went to another worker'),
  );
  if (failed) return [...lost, lostRun(taskId, `the queue job failed: ${job.failedReason}`)];
  const value = job.returnvalue;
  if (value?.version !== JOB_VERSION) {
    throw new SiloError('SILO_USAGE', `a queue worker answered job ${job.id} in a format this coordinator does not know; run the same Silo version on every machine`);
  }
  if (value.kind === 'refused') throw new SiloError('SILO_USAGE', `worker ${value.worker} refused ${taskId}: ${value.message}`);
  const runDir = writeRunFiles(outDir, value.result.runId, value.files);
  return [...lost, { ...value.result, runDir }];
}
