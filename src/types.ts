/**
 * The shared vocabulary of Silo: what users write (environments, tools, tasks, agents),
 * what a rollout records (trace events, checks) and what it returns (RunResult).
 */

/** A JSON Schema object as written by a tool author (usually `as const`). */
export type JsonSchema = { readonly [key: string]: unknown };

/** Deterministic services handed to `createState` and to every tool run. */
export interface WorldContext {
  /** A seeded PRNG in [0, 1); the seed is recorded in run.json. */
  random(): number;
  /** The simulated clock in ms since the epoch: fixed for the rollout unless advanced. */
  now(): number;
  /** Moves the simulated clock forward by `ms` (for environments that model time). */
  advance(ms: number): void;
  /** The seed of this rollout. */
  readonly seed: number;
}

/**
 * A tool's input schema as an agent receives it: the author's schema (as enforced), filled in so
 * that it is the object schema agent frameworks ask for. `type: 'object'`, `properties` and
 * `required` are always there; `additionalProperties` is `false` unless the author opened the
 * schema (then it is what the author wrote, and absent when another keyword such as `anyOf` or
 * `unevaluatedProperties` opens it). Assignable where the OpenAI Agents SDK (`tool({ parameters })`),
 * the Vercel AI SDK (`jsonSchema()`), LangChain and MCP take a JSON Schema, without a cast.
 */
export interface ToolInputSchema {
  type: 'object';
  // `any`, as JSON Schema's own typings have it: frameworks type sub-schemas each their own way.
  properties: { [name: string]: any };
  required: string[];
  /**
   * `false` unless the author opened the schema. Typed loosely on purpose: the OpenAI Agents SDK
   * types strict tools' schemas with `additionalProperties: false` and other tools' with `true`.
   */
  additionalProperties: any;
  [keyword: string]: any;
}

/** A tool as an agent sees it: schema only, never the `run` function. */
export interface ToolSchema {
  name: string;
  description: string;
  inputSchema: ToolInputSchema;
}

/** A tool as an environment defines it. */
export interface Tool<State = any, Input = any, Output = unknown> {
  name: string;
  description: string;
  inputSchema: JsonSchema;
  /** Optional hint: the tool never changes the world (used by diagnosis and `silo check`). */
  readOnly?: boolean;
  /** Acts on the live world. May be async. Throwing makes the call a `tool_error`. */
  run(state: State, input: Input, ctx: WorldContext): Output | Promise<Output>;
}

/** A world and the tools that act on it. */
export interface Environment<State = any> {
  name: string;
  /** MUST return a new object on every call (structuredClone a seed; never return a cached module). */
  createState(ctx: WorldContext): State | Promise<State>;
  tools: readonly Tool<State>[];
  /** Start of the simulated clock (ISO date or ms). Default 2025-01-01T00:00:00.000Z. */
  clockStart?: string | number;
  /**
   * Track writes (default true): tools act on the world through proxies, each call's changes are
   * recorded and the run's diff costs what changed. Worlds that are not plain data are snapshotted
   * instead, as they are with `false`.
   */
  trackChanges?: boolean;
}

/** One graded fact about a rollout. */
export interface Check {
  name: string;
  pass: boolean;
  expected?: unknown;
  actual?: unknown;
  message?: string;
  /**
   * A gate (Silo's `mayChange` and `grounded` checks are gates): it fails the run when it fails,
   * and counts in neither the numerator nor the denominator of `score` when it passes.
   */
  gate?: boolean;
}

/** Per-run limits. Task `limits` and CLI flags override the defaults. */
export interface Limits {
  /** Wall-clock limit for the agent, ms. */
  timeoutMs: number;
  /** Calls that may go past the limit check. */
  maxToolCalls: number;
  /** Time an agent gets to return after its signal fires, before its worker is terminated. */
  graceMs: number;
  /** V8 heap limit of the agent's worker, MiB. */
  memoryMb: number;
  /** UTF-8 bytes of the output text; longer output is truncated and flagged. */
  maxOutputBytes: number;
  /** UTF-8 bytes of one tool call's input as sent by the agent. */
  maxMessageBytes: number;
  /** Model requests the agent may make through the gateway. */
  maxModelRequests: number;
  /** Input + output tokens of the agent's model requests; none when absent. */
  maxTokens?: number;
}

/** What a verifier receives. */
export interface VerifyArgs<State = any> {
  initial: State;
  final: State;
  /** The agent's output text, or null. */
  output: string | null;
  trace: readonly TraceEvent[];
  /**
   * The dialogue with the task's simulated user, first message first (the user's opening line);
   * empty for a task without a user. Run solo, the instruction the agent got as the user's message
   * and the agent's answer as its one message (so `check.said` reads the answer).
   */
  conversation: readonly Message[];
}

/** One message of a conversation between the agent and a simulated user. */
export interface Message {
  role: 'agent' | 'user';
  text: string;
}

/**
 * A task's simulated user: someone who knows what they want and reveals it only when asked. It
 * runs on the host, never in the agent's worker: scripted (a function of the conversation so far)
 * or an LLM (`model`, prompted with `instruction`). Neither: the task runs solo.
 */
export interface UserSpec {
  /** The user's private brief: who they are, what they want, what they know. */
  instruction: string;
  /**
   * A scripted user: its next message, given the conversation so far (empty for the opening
   * line). A message containing `###STOP###`, `###TRANSFER###` or `###OUT-OF-SCOPE###` ends the
   * conversation. Throwing makes the run an error (`user_error`).
   */
  script?: (conversation: readonly Message[], ctx: UserContext) => string | Promise<string>;
  /** An LLM user, `openai:<model>` or `anthropic:<model>`, called on the host through the gateway's upstream. */
  model?: string;
  /** Replies the user gives to the agent's messages (the opening line not counted); default 30. */
  maxTurns?: number;
}

/** What a scripted user gets besides the conversation. */
export interface UserContext {
  /** The user's brief (UserSpec.instruction). */
  instruction: string;
  /** Replies given so far (the opening line not counted). */
  turn: number;
  /** The rollout's seed. */
  seed: number;
}

/** What `user.send` resolves to. It never rejects. */
export type UserReply =
  | { ok: true; reply: string; ended: boolean }
  | { ok: false; error: { code: UserErrorCode; message: string } };

/**
 * Codes of a refused `user.send`: `conversation_ended` (the user ended it, or maxTurns),
 * `too_large` (over maxUserMessageBytes), `invalid_input` (not text, or empty), `user_error` (the
 * simulated user failed: the run is an error), `aborted` (the rollout is ending).
 */
export type UserErrorCode = 'conversation_ended' | 'too_large' | 'invalid_input' | 'user_error' | 'aborted';

/** The agent's side of a conversation (`args.user`). */
export interface UserChannel {
  /** Sends a message to the user and resolves with the reply. Never rejects. */
  send(text: string): Promise<UserReply>;
}

/** A reference solution: the calls to make and the answer to give. */
export interface Solution {
  calls: { name: string; input: unknown }[];
  output?: unknown;
}

/** A task: an instruction in an environment, and a verifier. */
export interface Task<State = any> {
  id: string;
  environment: Environment<State>;
  instruction: string;
  verify(args: VerifyArgs<State>): Check[] | Promise<Check[]>;
  /**
   * A simulated user the agent talks to (see UserSpec). With one, the agent's instruction is the
   * user's opening line (after `policy`, when set); run solo (`--solo`), it is `instruction`.
   */
  user?: UserSpec;
  /**
   * What the agent is told ahead of a conversation (tau-bench's policy): with a user, the agent's
   * instruction is this, a blank line, then the user's opening line. Unused without a user.
   */
  policy?: string;
  limits?: Partial<Limits>;
  /** Paths the agent may change (dot-separated, `*` = one segment); any other change fails a check. */
  mayChange?: readonly string[];
  tags?: readonly string[];
  solution?: Solution;
  /**
   * An answer with nothing behind it (`ungrounded_answer`: no successful tool call, or an action
   * claimed while the world did not change) fails the run, as a failed `grounded` check, instead
   * of passing with a warning (`--strict` does this for every task).
   */
  strict?: boolean;
}

/** Codes of a failed tool call; a closed set. */
export type ToolErrorCode = 'tool_not_found' | 'invalid_input' | 'tool_error' | 'limit_exceeded' | 'aborted';

/** What `callTool` resolves to. It never rejects. */
export type ToolResult =
  | { ok: true; value: unknown }
  | { ok: false; error: { code: ToolErrorCode; message: string; [detail: string]: unknown } };

/** Options handed to an agent: plain JSON (`openai:<model>` gives `{ model }`, `--max-turns` gives `maxTurns`). */
export type AgentOptions = { readonly [key: string]: unknown };

/** Model usage an agent reports; each report adds to run.json `reportedUsage`. */
export interface UsageReport {
  inputTokens: number;
  outputTokens: number;
  /** Model requests this report covers; 1 when absent. */
  requests?: number;
}

/** The single argument of an agent function. */
export interface AgentArgs {
  instruction: string;
  tools: ToolSchema[];
  callTool(name: string, input?: unknown): Promise<ToolResult>;
  signal: AbortSignal;
  log(message: string, data?: unknown): void;
  /** The agent's options (RolloutOptions.agentOptions; for built-in agents `model` and `maxTurns`). */
  options: AgentOptions;
  /**
   * Adds one model request's token counts (or several, with `requests`) to run.json
   * `reportedUsage` (what the agent says; `usage` is what the gateway measured).
   */
  reportUsage(usage: UsageReport): void;
  /** The task's simulated user; undefined for a task without one (or run solo). */
  user?: UserChannel;
}

/** An agent module default-exports one of these. */
export type Agent = (args: AgentArgs) => unknown;

/** How the agent's part of a rollout ended. */
export type Termination =
  | 'returned'
  | 'threw'
  | 'timeout'
  | 'tool_call_limit'
  | 'model_limit'
  | 'crashed'
  | 'out_of_memory'
  | 'load_error'
  | 'not_started'
  | 'cancelled';

/** A run's status: `running` until it ends, then `passed` (every check passed), `failed`, or `error` (no grade). */
export type RunStatus = 'running' | 'passed' | 'failed' | 'error';

/** Why a run has status `error`. */
export type RunErrorCode = 'environment_error' | 'verifier_error' | 'agent_load_error' | 'user_error' | 'model_error' | 'cancelled' | 'internal_error';

/** The data form of a failure, as it crosses threads or lands in result.json. */
export interface ErrorInfo {
  /** A stable code (`environment_error`, `verifier_error`, `agent_load_error`, ...). */
  code: string;
  /** One line saying what happened and, where possible, what to do. */
  message: string;
  /** Where it happened, when a stack was available. */
  stack?: string;
}

interface EventBase {
  seq: number;
  /** ms since the run started */
  t: number;
}

/**
 * A deep-diff change record: `kind` N (new), D (deleted), E (edited) or A (array element, with
 * `index` and the element's own record in `item`), at `path`, with `lhs` (before) and `rhs` (after).
 */
export interface StateChange {
  kind: 'N' | 'D' | 'E' | 'A';
  path?: (string | number)[];
  lhs?: unknown;
  rhs?: unknown;
  index?: number;
  item?: StateChange;
}

/** One line of trace.jsonl. */
export type TraceEvent = EventBase &
  (
    | { type: 'run_started'; taskId: string; agent: string; seed: number }
    | { type: 'tool_call'; callId: number; name: string; input: unknown }
    | ({ type: 'tool_result'; callId: number; durationMs: number; changes?: StateChange[] } & ToolResult)
    | { type: 'agent_log'; message: string; data?: unknown; stream?: 'stdout' | 'stderr' }
    | { type: 'agent_returned'; output: string | null; outputTruncated?: boolean; outputError?: string }
    | { type: 'agent_threw'; error: ErrorInfo }
    | { type: 'limit_exceeded'; limit: string; message: string }
    | ({ type: 'model_call' } & ModelCallEvent)
    /** A message of the conversation with the simulated user (the opening line is the first). */
    | {
        type: 'user_message';
        from: 'agent' | 'user';
        text: string;
        /** Set on the user's last message: it ended the conversation (a stop token), or it was the last reply maxTurns allows. */
        ended?: 'user' | 'max_turns';
      }
    /** The simulated user failed (a script threw, an LLM user's calls failed): the run is an error. */
    | { type: 'user_error'; message: string }
    | { type: 'run_finished'; status: RunStatus; termination: Termination; score: number | null }
  );

/** A model request that went through the gateway, as the trace records it when it completes. */
export interface ModelCallEvent {
  /** 1, 2, ... within the run; the line of models.jsonl with the bodies has the same. */
  requestId: number;
  /** Absent for the agent's requests; `user` for a simulated user's, made by Silo on the host. */
  actor?: 'user';
  provider: 'openai' | 'anthropic';
  endpoint: 'chat/completions' | 'responses' | 'models' | 'messages';
  /** The request's `model`. */
  model: string | null;
  stream: boolean;
  /** The HTTP status the agent received; null when no answer came. */
  status: number | null;
  durationMs: number;
  /** Time waiting for a slot upstream (`--model-concurrency`) and between retries, ms. */
  queuedMs: number;
  usage: { inputTokens: number; outputTokens: number };
  /** Replayed from the model cache. */
  cached?: true;
  /** Retries after the first try (429, 5xx, lost connections). */
  retries?: number;
  error?: string;
}

/** Model usage in run.json and the eval summary. */
export interface UsageTotals {
  inputTokens: number;
  outputTokens: number;
  requests: number;
}

/** Distributes over the union so each event type keeps its own fields. */
export type TraceEventInput = TraceEvent extends infer E
  ? E extends TraceEvent
    ? Omit<E, 'seq' | 't'>
    : never
  : never;

/** run.json */
export interface RunRecord {
  /** Format version of the artifacts. */
  version: 1;
  /** ULID: sorts by start time. */
  runId: string;
  /** Set when the run belongs to an eval. */
  evalId?: string;
  /** 0-based trial number within an eval. */
  trial?: number;
  taskId: string;
  /** Absolute path of the task file, when the task came from one. */
  taskFile: string | null;
  /** The agent module's absolute path, or a built-in agent's name (`openai:<model>`). */
  agent: string;
  status: RunStatus;
  /** Null while running. */
  termination: Termination | null;
  /** ISO time. */
  startedAt: string;
  /** ISO time; null while running. */
  finishedAt: string | null;
  /** Wall time of the whole rollout, ms. */
  durationMs: number | null;
  /** Sum of tool durations, ms. */
  toolTimeMs: number;
  /** Time the agent spent outside tools (thinking), ms; without the simulated user's replies. */
  agentTimeMs: number | null;
  /** Time spent waiting for the simulated user's replies, ms (a task with a user). */
  userTimeMs?: number;
  /** Calls that went past the limit check. */
  toolCalls: number;
  /** Calls refused by a limit or after the signal; they ran nothing. */
  refusedCalls: number;
  /** The limits in force (defaults, then task, then CLI). */
  limits: Limits;
  /** Seed of ctx.random(); `--seed` replays it. */
  seed: number;
  /** Silo's version. */
  silo: string;
  /** Node's version. */
  node: string;
  /** sha256 of the initial world's JSON; null if the world could not be built. */
  worldHash: string | null;
  /**
   * How the world's changes were found: `writes` (tracked; each call's changes are in the trace),
   * or `snapshot` (a copy and a full diff), with the reason. `lost` says why tracking stopped
   * giving per-call changes partway (the run's diff stays exact).
   */
  tracking?: { mode: 'writes' | 'snapshot'; reason?: string; lost?: string };
  /** Providers the agent was granted through the gateway (`--provider`, or its built-in agent's). */
  providers?: ('openai' | 'anthropic')[];
  /**
   * Model usage measured by the gateway from the provider's responses, when the agent was granted
   * a provider. `cachedRequests`: answered from the model cache; `refusedRequests`: refused by a limit.
   */
  usage?: UsageTotals & { source: 'gateway'; cachedRequests?: number; refusedRequests?: number };
  /** What the agent reported with reportUsage (never added to `usage`), when it reported anything. */
  reportedUsage?: UsageTotals;
  /** ISO time of the last `silo regrade` of this run (its earlier results are kept as `result.<n>.json`). */
  regradedAt?: string;
  /**
   * How the agent's worker was isolated, once it ran: in a sandbox process jailed by bubblewrap
   * (`bwrap`), in a sandbox process with Linux namespaces only (`unshare`), in a plain sandbox
   * process (`process`), or in a thread of the host (`thread`). SECURITY.md says what each holds.
   */
  isolation?: 'bwrap' | 'unshare' | 'process' | 'thread';
  /**
   * The process that runs it: a run still `running` whose owner is gone (killed, out of memory)
   * is reported as crashed by `silo ls` and `silo show` (see src/owner.ts).
   */
  owner?: Owner;
  /** Set when an ungrounded answer fails the run (`--strict`, or `strict: true` on the task). */
  strict?: true;
  /**
   * The task's simulated user, when it has one: `scripted`, `model` (with the model), or `solo`
   * (run without it: `--solo`, or a user with neither script nor model). `messages` in the dialogue.
   */
  user?: { mode: 'scripted' | 'model' | 'solo'; model?: string; messages?: number; endedBy?: 'user' | 'max_turns' };
  /** The LLM user's model usage, measured by the gateway; never part of `usage`. */
  userUsage?: UsageTotals & { cachedRequests?: number };
  /**
   * Where `durationMs` went, ms: `world` (building the world), `startup` (preparing and starting
   * the agent's worker and loading its module), `agent` (the agent running: thinking and tools),
   * `grading` (diff, verifier, diagnosis); the rest is writing the artifacts.
   */
  phases?: { worldMs: number; startupMs: number; agentMs: number; gradingMs: number };
}

/** The process that writes a run or an eval. */
export interface Owner {
  pid: number;
  /** The machine's host name. */
  host: string;
  /** Linux's boot id: a reboot since means the process is gone. */
  boot?: string;
  /** When the process started, in clock ticks since boot (Linux): tells a reused pid apart. */
  since?: string;
}

/** Codes of the diagnosis of a run (see src/inspect/diagnose.ts). */
export type DiagnosisCode =
  | 'ungrounded_answer'
  | 'never_asked'
  | 'user_gave_up'
  | 'hallucinated_tool'
  | 'hallucinated_parameter'
  | 'self_corrected'
  | 'gave_up_after_error'
  | 'repeated_failing_call'
  | 'collateral_damage'
  | 'wrong_final_state'
  | 'wrong_answer'
  | 'timeout'
  | 'tool_call_limit'
  | 'model_limit'
  | 'crashed'
  | 'out_of_memory'
  | 'threw'
  | 'load_error';

/** One finding of a run's diagnosis: how it went wrong, and where. */
export interface Diagnosis {
  code: DiagnosisCode;
  message: string;
  /** The trace event it points at, when one event is to blame. */
  seq?: number;
  /**
   * That event as the timelines of `silo show` and the report name it: `call #3` (the number
   * printed next to the call), `the answer`, `the throw`, `the limit`, or its time.
   */
  at?: string;
}

/** result.json */
export interface ResultRecord {
  version: 1;
  runId: string;
  taskId: string;
  status: RunStatus;
  score: number | null;
  checks: Check[];
  output: string | null;
  outputTruncated: boolean;
  termination: Termination;
  /** How the run went wrong, read off the trace, the diff and the checks; empty for a clean pass. */
  diagnosis: Diagnosis[];
  error?: ErrorInfo;
}

/** What `runRollout` returns. */
export interface RunResult {
  runId: string;
  runDir: string;
  taskId: string;
  status: Exclude<RunStatus, 'running'>;
  score: number | null;
  termination: Termination;
  checks: Check[];
  output: string | null;
  diagnosis: Diagnosis[];
  error?: ErrorInfo;
  durationMs: number;
  toolCalls: number;
  /** Model usage measured by the gateway, when the agent was granted a provider. */
  usage?: UsageTotals;
  /** The LLM user's model usage, apart from the agent's. */
  userUsage?: UsageTotals;
}

/** Per-task statistics of an eval (summary.json `tasks`). */
export interface TaskStats {
  taskId: string;
  /** Finished runs of this task (graded or error). */
  trials: number;
  passed: number;
  failed: number;
  /** Runs with no grade (status error); excluded from n. */
  errors: number;
  /** passed / graded runs; null when none was graded. */
  passRate: number | null;
  /** Keyed by k: every power of two up to the trial count, and the count itself. */
  passAtK: Record<string, number | null>;
  passHatK: Record<string, number | null>;
  meanScore: number | null;
  p50Ms: number | null;
  p95Ms: number | null;
  /** The task both passed and failed. */
  flaky: boolean;
  /** Passed runs whose answer had nothing behind it (`ungrounded_answer`): passes to look at. */
  suspicious: number;
  /** Model usage of the task's runs (retried ones included: they were paid for), when any was measured. */
  usage?: UsageTotals;
  /** The LLM user's model usage over the task's runs, apart from the agent's. */
  userUsage?: UsageTotals;
}

/** What an eval was asked to do; stored so that `--resume` can do the same. */
export interface EvalOptionsRecord {
  taskFiles: string[];
  agent: string;
  trials: number;
  task: string[];
  tag: string[];
  limits: Partial<Limits>;
  retries: number;
  reuseWorkers: boolean;
  /** Names of the variables the agent was given (`--env`, and a built-in agent's base URL and key); never their values. */
  env?: string[];
  /** The agent's options (`--max-turns`). */
  agentOptions?: AgentOptions;
  /** `--shard i/n`: this eval runs only shard `index` (1-based) of `count` (see src/eval/shard.ts). */
  shard?: { index: number; count: number };
  /** `--strict`: an ungrounded answer fails the run (a failed `grounded` check). */
  strict?: true;
  /** `--concurrency` as given (absent: the default); `--resume` keeps it unless given again. */
  concurrency?: number;
  /** Providers the agent is granted through the gateway (`--provider`). */
  providers?: ('openai' | 'anthropic')[];
  /** `--user provider:model`: the LLM user of every task that has a user. */
  user?: string;
  /** `--solo`: tasks that have a user run without one. */
  solo?: true;
}

/** `.silo/evals/<evalId>/summary.json` */
export interface EvalSummary {
  version: 1;
  evalId: string;
  status: 'running' | 'completed' | 'cancelled' | 'error';
  startedAt: string;
  finishedAt: string | null;
  durationMs: number | null;
  agent: string;
  /** The k asked for. */
  trials: number;
  options: EvalOptionsRecord;
  /** The process that runs it, while it runs (see RunRecord.owner). */
  owner?: Owner;
  tasks: TaskStats[];
  totals: {
    runs: number;
    passed: number;
    failed: number;
    errors: number;
    /** Infrastructure retries (crashed workers, internal errors), counted apart from trials. */
    retries: number;
    /** Passed runs with an ungrounded answer (see TaskStats.suspicious). */
    suspicious: number;
    passRate: number | null;
    passRateCi95: [number, number] | null;
    /** Model usage of every run, when any was measured. */
    usage?: UsageTotals;
    /** The LLM user's model usage over every run, apart from the agent's. */
    userUsage?: UsageTotals;
  };
  /** The comparison with the eval given as `--baseline` (see `silo compare`). */
  baseline?: BaselineRecord;
  /** ISO time of the last `silo regrade` of this eval's runs. */
  regradedAt?: string;
}

/** summary.json `baseline`: how this eval compares with an earlier one, task by task (see compareEvals). */
export interface BaselineRecord {
  evalId: string;
  /** Tasks whose pass rate fell, significantly after Holm's correction across tasks. */
  regressed: string[];
  /** Tasks whose pass rate rose, likewise. */
  improved: string[];
  /** Mean per-task pass rate of this eval minus the baseline's, over the tasks both graded. */
  delta: number | null;
  /** Its 95% bootstrap interval over tasks. */
  ci95: [number, number] | null;
}

/** One line of `.silo/evals/<evalId>/runs.jsonl`: a run that ended, as the eval saw it. */
export interface EvalRunLine {
  runId: string;
  taskId: string;
  trial: number;
  status: Exclude<RunStatus, 'running'>;
  score: number | null;
  termination: Termination;
  durationMs: number;
  /** The run hit an infrastructure failure and was run again; it does not count. */
  retried?: boolean;
  /** Failed checks (name and message), for reporters. */
  failed?: { name: string; message?: string }[];
  /** A passed run whose answer is ungrounded: the finding's message (reporters show it as a warning). */
  suspicious?: string;
  error?: ErrorInfo;
  /** Model usage measured by the gateway. */
  usage?: UsageTotals;
  /** The LLM user's model usage. */
  userUsage?: UsageTotals;
}
