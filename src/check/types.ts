/**
 * The vocabulary of `silo check`: which checks there are, what a finding is, and the report that
 * checkTasks returns (and `silo check --json` prints).
 */

/** The checks, in the order they run and are reported. */
export const CHECK_NAMES = ['fresh_state', 'deterministic_state', 'tool_schemas', 'do_nothing_fails', 'solution_passes'] as const;

/**
 * - `fresh_state`: two calls of createState share no object (per environment).
 * - `deterministic_state`: the same seed gives the same world (per environment).
 * - `tool_schemas`: every inputSchema compiles in ajv strict mode; names unique; descriptions given (per tool).
 * - `do_nothing_fails`: an agent that does nothing fails the task (per task).
 * - `solution_passes`: the task's reference solution passes it (per task that has one).
 */
export type CheckName = (typeof CHECK_NAMES)[number];

/** What a finding is about; stable, for machines. */
export type FindingCode =
  /** createState threw, timed out, or returned something that is not an object. */
  | 'create_state_failed'
  /** The world cannot be copied with structuredClone, so no rollout can snapshot it. */
  | 'uncloneable_state'
  /** An object is reachable from two worlds returned by createState. */
  | 'shared_state'
  /** One object sits at two paths of one world (or the world holds a cycle). A warning. */
  | 'aliased_state'
  /** Two worlds built with the same seed differ. */
  | 'nondeterministic_state'
  /** An inputSchema that ajv's strict mode refuses. */
  | 'schema_not_strict'
  | 'duplicate_tool_name'
  | 'missing_description'
  /** The do-nothing agent passes the task. A warning. */
  | 'do_nothing_passes'
  /** The do-nothing rollout could not be graded (verifier_error, environment_error, ...). */
  | 'do_nothing_error'
  /** A solution call that could not run: an unknown tool, or an input the schema refuses. */
  | 'solution_call_failed'
  /** A solution call whose tool threw. A warning: a reference solution may try and fall back. */
  | 'solution_call_threw'
  /** The verifier fails the solution. */
  | 'solution_fails'
  /** The solution could not be graded: the verifier threw, the world could not be built, ... */
  | 'solution_error';

/** The codes that are warnings; every other finding is an error. */
export const WARNING_CODES: ReadonlySet<FindingCode> = new Set<FindingCode>(['aliased_state', 'do_nothing_passes', 'solution_call_threw']);

/** One thing a check found: an error (exit 1) or a warning (see WARNING_CODES). */
export interface Finding {
  check: CheckName;
  code: FindingCode;
  /** One line saying what is wrong and, where possible, what to do. */
  message: string;
  /** Set for the findings of environment checks. */
  environment?: string;
  /** Set for the findings of task checks. */
  taskId?: string;
}

/** How one check went. */
export interface CheckSummary {
  check: CheckName;
  /** What it looked at: environments, tools (`tool_schemas`) or tasks. */
  checked: number;
  /** Tasks it could not look at: no solution given, or an environment whose worlds cannot be built. */
  skipped: number;
  errors: number;
  warnings: number;
}

/** What checkTasks returns. */
export interface CheckReport {
  version: 1;
  /** Tasks checked. */
  tasks: number;
  /** Distinct environments (by identity) among them. */
  environments: number;
  durationMs: number;
  /** Stopped before every task was checked (the signal fired). */
  cancelled: boolean;
  /** One entry per check, in CHECK_NAMES order. */
  checks: CheckSummary[];
  errors: Finding[];
  warnings: Finding[];
}

/** Where a check stands, for progress lines. */
export interface CheckProgress {
  /** Tasks whose checks are done. */
  done: number;
  total: number;
  elapsedMs: number;
}

/** Options of checkTasks. */
export interface CheckOptions {
  /** Tasks checked at once (do-nothing rollouts and solution replays). Default 4. */
  concurrency?: number;
  /** Seed of ctx.random() for every world the checks build. Default 0. */
  seed?: number;
  /** Only tasks with these ids or globs (OR), ANDed with `tag`. */
  task?: string[];
  tag?: string[];
  /** Stops scheduling tasks; running do-nothing rollouts end as cancelled and are not reported. */
  signal?: AbortSignal;
  /** Called after each task. */
  onProgress?: (progress: CheckProgress) => void;
}
