/**
 * Every default and named timing constant in one place, and the one function that merges
 * defaults, task overrides and CLI flags into checked Limits.
 */
import { SiloError } from './errors.js';
import type { Limits } from './types.js';
import type { ReportLimits } from './inspect/report-data.js';

export const MiB = 1024 * 1024;

/** SPEC defaults. */
export const DEFAULT_LIMITS: Readonly<Limits> = Object.freeze({
  timeoutMs: 300_000,
  maxToolCalls: 500,
  graceMs: 1_000,
  memoryMb: 512,
  maxOutputBytes: MiB,
  maxMessageBytes: MiB,
  maxModelRequests: 200,
});

/** Start of the simulated clock when an environment does not set one. */
export const DEFAULT_CLOCK_START = Date.UTC(2025, 0, 1);

/** How long a verifier may run before the run becomes a `verifier_error`. */
export const VERIFIER_TIMEOUT_MS = 60_000;

/** How long `createState` may run before the run becomes an `environment_error`. */
export const CREATE_STATE_TIMEOUT_MS = 60_000;

/** After the worker is gone, how long the host waits for its port to drain and close. */
export const PORT_DRAIN_MS = 2_000;
/** After a worker's grace period, how long its sandbox gets to terminate it before the whole sandbox is killed, ms. */
export const SANDBOX_KILL_MS = 5_000;

/** The least and the most time an agent's worker gets to start, ms (see workerStartMs in src/rollout/agent.ts). */
export const WORKER_START_MIN_MS = 10_000;
export const WORKER_START_MAX_MS = 60_000;

/**
 * After a worker is terminated, how long the host waits for its runner to say it is gone before
 * taking it as gone: longer than a sandbox takes to kill itself (SANDBOX_KILL_MS) and drain.
 */
export const WORKER_GONE_MS = SANDBOX_KILL_MS + PORT_DRAIN_MS + 1_000;

/** After the agent is done, how long tool calls already running may take to settle. */
export const INFLIGHT_SETTLE_MS = 5_000;

/** Deepest nesting of arrays and objects a tool input may have. */
export const MAX_INPUT_DEPTH = 64;

/** Bytes added to the message cap for the envelope around a tool input or an output. */
export const MESSAGE_ENVELOPE_BYTES = 64 * 1024;

/** Largest JSON preview of a check's expected/actual value kept in result.json. */
export const CHECK_VALUE_MAX_CHARS = 2_000;

/**
 * Longest tool name the host takes from an agent, characters; a longer one is cut (and so names
 * no tool). Tool names are short (MCP allows 128, OpenAI 64); without a cap each call of a
 * flood could carry megabytes of name into the trace, twice (the call and its error).
 */
export const MAX_TOOL_NAME_CHARS = 256;

/** Longest text the host keeps of an agent's account of a problem (a bad input, an output that could not be sent). */
export const AGENT_NOTE_MAX_CHARS = 1_000;

/**
 * Characters of calls one rollout may have waiting for the host at once (calls run one at a time;
 * an agent can send them faster than its tools answer). A call past it is refused at once,
 * unrun, rather than kept: what an agent sends cannot pile up in the host's memory.
 */
export const CALLS_WAITING_MAX_CHARS = 8 * MiB;

/**
 * Characters of trace one rollout keeps in memory (the events the verifier and the diagnosis
 * read). Past it, events are still written whole to trace.jsonl, but the copies kept in memory
 * hold a note instead of their large parts (inputs, values, changes, log data).
 */
export const TRACE_MEMORY_MAX_CHARS = 8 * MiB;

/** Largest agent_log message kept in the trace; longer ones are truncated. */
export const LOG_MESSAGE_MAX_CHARS = 64 * 1024;

/**
 * Characters of agent_log events (the agent's logs and notes of dropped messages) one run keeps;
 * past it, logs are dropped, so an agent printing in a loop cannot fill the host's memory or disk.
 */
export const LOG_MAX_CHARS_PER_RUN = 16 * MiB;

/** What each agent_log event costs against that budget besides its text. */
export const LOG_EVENT_COST = 128;

/** Largest number a single usage report may carry in any field (tokens or requests). */
export const USAGE_MAX_PER_REPORT = 100_000_000;

/** Where run.json `usage` totals stop growing (a trillion: far past any real run, far below float trouble). */
export const USAGE_MAX_TOTAL = 1_000_000_000_000;

/**
 * UTF-8 bytes of one message to or from a simulated user. A longer message from the agent is
 * refused (`too_large`, the user never sees it); a longer one from a scripted or LLM user is cut.
 */
export const USER_MESSAGE_MAX_BYTES = 64 * 1024;

/** Replies a simulated user gives before the conversation ends (`user.maxTurns`). */
export const DEFAULT_USER_MAX_TURNS = 30;

/** How long one reply of a simulated user may take (a script, or an LLM user with its retries), ms. */
export const USER_REPLY_TIMEOUT_MS = 120_000;

/** Model turns a built-in agent takes before it gives up (`--max-turns`). */
export const DEFAULT_MAX_TURNS = 50;

/** Rollouts an eval runs at once: agents mostly wait on models, so well above the core count. */
export const DEFAULT_EVAL_CONCURRENCY = 32;

/** Times an eval retries a run that failed for infrastructure reasons. */
export const DEFAULT_RETRIES = 2;

/** How often a running eval rewrites its summary.json and reports progress. */
export const SUMMARY_WRITE_MS = 2_000;

/** Where artifacts go when no `--out` is given. */
export const DEFAULT_OUT_DIR = '.silo';

/** Smallest heap an agent worker may be given, MiB (below it Node itself does not start). */
export const MIN_MEMORY_MB = 16;

/** Seeds are 32-bit: 0 ≤ seed < 2^32 (the PRNG works on 32 bits, so larger ones would alias). */
export function resolveSeed(seed: number | undefined, draw: () => number): number {
  const value = seed ?? draw();
  if (!Number.isInteger(value) || value < 0 || value >= 2 ** 32) {
    throw new SiloError('SILO_USAGE', `seed must be an integer from 0 to ${2 ** 32 - 1} (got ${String(value)})`);
  }
  return value;
}

/** Merges limits (later sources win) and checks each value. */
export function resolveLimits(...sources: (Partial<Limits> | undefined)[]): Limits {
  const merged: Limits = { ...DEFAULT_LIMITS };
  // Every limit with a default, and those without one (absent: no limit).
  const keys = [...(Object.keys(DEFAULT_LIMITS) as (keyof Limits)[]), 'maxTokens'] as const;
  for (const source of sources) {
    if (!source) continue;
    for (const key of keys) {
      const value = source[key];
      if (value !== undefined) merged[key] = value;
    }
  }
  for (const key of Object.keys(merged) as (keyof Limits)[]) {
    const value = merged[key];
    const min = key === 'maxToolCalls' || key === 'graceMs' || key === 'maxModelRequests' ? 0 : key === 'memoryMb' ? MIN_MEMORY_MB : 1;
    if (typeof value !== 'number' || !Number.isFinite(value) || value < min || !Number.isInteger(value)) {
      throw new SiloError('SILO_USAGE', `limit ${key} must be an integer >= ${min} (got ${String(value)})`);
    }
  }
  return merged;
}

/** Largest artifacts (bytes of all files of one run) a queue worker sends back through Redis. */
export const QUEUE_MAX_RESULT_BYTES = 8 * MiB;

/**
 * How long a queue worker's lock on a job lasts (renewed at half of it). A worker silent for
 * longer (killed, cut off) has its job given to another worker.
 */
export const QUEUE_LOCK_MS = 10_000;

/** How often a coordinator collects finished jobs, and a worker looks for evals to serve. */
export const QUEUE_POLL_MS = 200;

/** How often a queue worker looks for evals to serve and for evals withdrawn (cancelled). */
export const QUEUE_WATCH_MS = 250;

/** Times a job whose worker stopped answering is given to another worker before it counts as lost. */
export const QUEUE_MAX_STALLS = 2;

/** How often a coordinator tells the workers its eval is alive. */
export const QUEUE_HEARTBEAT_MS = 5_000;

/** An eval whose coordinator has been silent this long is dropped from the list workers serve. */
export const QUEUE_STALE_EVAL_MS = 24 * 60 * 60_000;

/** After a cancel, how long the coordinator waits for the rollouts running on workers to end. */
export const QUEUE_CANCEL_WAIT_MS = 30_000;

/** How long connecting to Redis may take before the queue is reported unreachable. */
export const QUEUE_CONNECT_TIMEOUT_MS = 5_000;

// Defaults the commands print in --help, kept here so that printing help loads nothing else.

/** Defaults of CheckOptions. */
export const CHECK_DEFAULTS = Object.freeze({
  /**
   * Tasks at once. The host does the world work of every rollout (createState, snapshot, diff,
   * verify) on one thread, so a few at once only hide the agents' round trips and async tools.
   */
  concurrency: 4,
  seed: 0,
});

/** Default caps: a report of any eval stays within a few MiB plus ~130 bytes per run. */
export const DEFAULT_REPORT_LIMITS: Readonly<ReportLimits> = Object.freeze({
  maxDetailRuns: 1000,
  maxDetailBytes: 8 * 2 ** 20,
  maxValueChars: 1000,
  maxEvents: 300,
  maxChanges: 100,
});

/** Bootstrap resamples of the overall interval. */
export const DEFAULT_RESAMPLES = 10_000;

/** Seed of the bootstrap: the same two evals always give the same interval. */
export const DEFAULT_COMPARE_SEED = 1;

/**
 * Runs graded again at once by default. Most verifiers only compute, and then one at a time is
 * fastest: on the retail world 4 at once took 1.7× as long per run (four runs' worlds alive at
 * once make the garbage collector work harder). A verifier that waits (a model as judge) wants more.
 */
export const DEFAULT_REGRADE_CONCURRENCY = 1;
