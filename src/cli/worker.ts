/** `silo worker`: runs the rollouts of queued evals (`silo eval --queue`) on this machine. */
import { InvalidArgumentError, Option, type Command } from 'commander';
import { DEFAULT_EVAL_CONCURRENCY, MiB } from '../options.js';
import type { WorkerEvent } from '../queue/worker.js';
import { integer, isolation, ISOLATION_HELP } from './options.js';
import type { Isolation } from '../pool/pool.js';
import { onInterrupt } from './signals.js';

interface WorkerFlags {
  queue: string;
  concurrency: number;
  isolation: Isolation;
  root?: string;
  maxResultMb?: number;
  out?: string;
  lockMs?: number;
}

export function registerWorker(program: Command): void {
  program
    .command('worker')
    .description('run the rollouts of evals started with `silo eval --queue` on this machine')
    .requiredOption('--queue <url>', 'the Redis the coordinator uses, e.g. redis://10.0.0.5:6379 (or redis://host:port/db)')
    .option('-c, --concurrency <n>', 'rollouts at once, per eval', integer(1), DEFAULT_EVAL_CONCURRENCY)
    .option('--isolation <mode>', ISOLATION_HELP, isolation, 'process')
    .option('--root <dir>', "the folder jobs' task and agent paths are relative to: this machine's copy of the coordinator's working directory (default: the current one)")
    .option('--max-result-mb <mb>', 'largest artifacts of one run sent back through Redis; larger runs are recorded as errors and kept on this machine', positive, 8)
    .option('-o, --out <dir>', 'where runs too large to send back are kept: <dir>/runs/ (default: <root>/.silo)')
    .addOption(new Option('--lock-ms <ms>', 'how long this worker may be silent before its jobs go to other workers').argParser(integer(500)).hideHelp())
    .addHelpText(
      'after',
      '\nThe worker serves every eval its Redis lists, until Ctrl-C (running rollouts finish and are sent\n' +
        'back; a second Ctrl-C exits at once, and their jobs go to other workers). It refuses a job whose\n' +
        "task or agent file differs from the coordinator's (content hashes), and logs one line per run to stderr.\n" +
        'Example, on each machine of the fleet:\n  silo worker --queue redis://10.0.0.5:6379 --concurrency 8 --root ~/my-evals',
    )
    .action(async (flags: WorkerFlags) => {
      const stop = new AbortController();
      const stopListening = onInterrupt(() => stop.abort());
      try {
        const { runWorker } = await import('../queue/worker.js');
        await runWorker({
          url: flags.queue,
          concurrency: flags.concurrency,
          isolation: flags.isolation,
          signal: stop.signal,
          onEvent: (event) => process.stderr.write(`${formatEvent(event)}\n`),
          ...(flags.root === undefined ? {} : { root: flags.root }),
          ...(flags.maxResultMb === undefined ? {} : { maxResultBytes: Math.round(flags.maxResultMb * MiB) }),
          ...(flags.lockMs === undefined ? {} : { lockMs: flags.lockMs }),
          ...(flags.out === undefined ? {} : { outDir: flags.out }),
        });
      } finally {
        stopListening();
      }
    });
}

function positive(value: string): number {
  const n = Number(value);
  if (value.trim() === '' || !(n > 0) || !Number.isFinite(n)) throw new InvalidArgumentError(`expected a number > 0, got '${value}'`);
  return n;
}

/** One log line of the worker. */
export function formatEvent(event: WorkerEvent): string {
  switch (event.type) {
    case 'ready':
      return `silo worker ${event.worker}: waiting for jobs (root ${event.root})`;
    case 'serving':
      return `eval ${event.evalId}: serving`;
    case 'left':
      return `eval ${event.evalId}: left (finished or cancelled)`;
    case 'run':
      return `eval ${event.evalId}: ${event.taskId} trial ${event.trial} ${event.status} in ${Math.round(event.durationMs)}ms`;
    case 'refused':
      return `eval ${event.evalId}: refused ${event.taskId}: ${event.message}`;
    case 'error':
      return `error: ${event.message}`;
  }
}
