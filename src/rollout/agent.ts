/**
 * Steps 4–6: load the agent in a worker of its own, call it once, take its output. Limits fire
 * the agent's signal, wait the grace period, then terminate the worker. The termination says
 * how the agent's part ended.
 */
import { performance } from 'node:perf_hooks';
import { HostChannel, type ChannelHandlers, type DoneMessage } from '../pool/channel.js';
import type { AgentRunner, WorkerExit } from '../pool/pool.js';
import { prepareAgent, type PreparedAgent, type PreparedAgents } from '../pool/compile.js';
import type { Guard } from '../pool/permissions.js';
import { explainHidden } from '../sandbox/jail.js';
import { describeError, SiloError } from '../errors.js';
import { INFLIGHT_SETTLE_MS, LOG_MESSAGE_MAX_CHARS, MESSAGE_ENVELOPE_BYTES, PORT_DRAIN_MS, WORKER_GONE_MS, WORKER_START_MAX_MS, WORKER_START_MIN_MS } from '../options.js';
import { LOG_BUDGET_NOTE, LogBudget } from './logs.js';
import type { AgentOptions, ErrorInfo, Limits, Termination } from '../types.js';
import type { WorkerTask } from '../protocol.js';
import { UsageTally, type Usage } from './usage.js';
import { createCallPath } from './call.js';
import { startGate } from '../pool/start-gate.js';
import { LimitGuard, type FiredLimit } from './limits.js';
import { capText } from './output.js';
import type { Toolbox } from './tools.js';
import { round, type Trace } from './trace.js';
import { TIMED_OUT, within } from '../time.js';
import type { ModelSession } from '../gateway/session.js';
import type { Conversation } from '../user/conversation.js';
import { USER_MESSAGE_MAX_BYTES } from '../options.js';

/** Marks a log message cut at LOG_MESSAGE_MAX_CHARS. */
const TRUNCATED = '… (truncated)';

/** How much of an agent's own account of its worker's end is kept (the worker cuts it there too). */
const EXIT_REASON_MAX_CHARS = 1_000;

/** What any way of driving the agent's part (steps 4–6) gets: the task, the tools, the limits, the trace. */
export interface DriveOptions {
  instruction: string;
  /** The tools bound to the live world (step 3). */
  toolbox: Toolbox;
  limits: Limits;
  /** Receives every event of the phase. */
  trace: Trace;
  /** Cancels the rollout (termination `cancelled`). */
  signal?: AbortSignal | undefined;
  /** The task's simulated user, when it has one: the agent gets `user.send`. */
  conversation?: Conversation | undefined;
}

/**
 * Steps 4–6 as one function: by default runAgent (the agent module in a worker); `silo serve`
 * drives them from an MCP client instead.
 */
export type AgentDriver = (opts: DriveOptions) => Promise<AgentPhase>;

/** What the agent phase needs: where to run, what to run, and what to record into. */
export interface AgentPhaseOptions extends DriveOptions {
  /** Pool whose workers run the agent. */
  pool: AgentRunner;
  /** Absolute path of the agent module. */
  agentPath: string;
  /** The agent worker's whole `process.env` (nothing else from the host reaches it). */
  env?: Readonly<Record<string, string>> | undefined;
  /** Handed to the agent as `options`. */
  agentOptions?: AgentOptions | undefined;
  /** Folders the agent must not be able to read; its worker refuses to load it if it can. */
  guard?: Guard[] | undefined;
  /** Agents already prepared (an eval's); without it, the agent is prepared for this rollout. */
  prepared?: PreparedAgents | undefined;
  /** The rollout's model gateway session and what its worker gets of it, when it was granted a provider. */
  models?: { session: ModelSession; task: NonNullable<WorkerTask['gateway']> } | undefined;
}

/** How the agent's part of the rollout went. */
export interface AgentPhase {
  /** How it ended; never `not_started` (the world was built before this phase). */
  termination: Exclude<Termination, 'not_started'>;
  output: string | null;
  outputTruncated: boolean;
  /** Why the value the agent returned could not be recorded (output null), when it could not: the run fails. */
  outputError?: string;
  /** Why the agent failed to load, threw or crashed. */
  error?: ErrorInfo;
  toolCalls: number;
  refusedCalls: number;
  toolTimeMs: number;
  /** From the worker taking the rollout to the agent's end, ms. */
  agentMs: number;
  /** Model usage the agent reported, if it reported any. */
  usage?: Usage | undefined;
  /** How the agent's worker was isolated (the runner says), when it ran. */
  isolation?: WorkerExit['isolation'];
}

/** Steps 4–6: runs the agent once in a worker of its own, under its limits, and takes its output. */
export async function runAgent(opts: AgentPhaseOptions): Promise<AgentPhase> {
  const { limits, trace } = opts;
  // A TypeScript agent is compiled here, on the host (its narrowed worker could not).
  let prepared: PreparedAgent;
  try {
    // Reused workers run the agent compiled, a fresh instance per rollout (PrepareOptions).
    const how = { reused: opts.pool.reusesWorkers === true };
    prepared = await (opts.prepared ? opts.prepared.get(opts.agentPath, how) : prepareAgent(opts.agentPath, how));
  } catch (err) {
    const error = { code: 'agent_load_error', message: err instanceof SiloError ? err.message : `cannot load ${opts.agentPath}: ${describeError(err)}` };
    trace.add({ type: 'agent_threw', error });
    return { termination: 'load_error', output: null, outputTruncated: false, error, toolCalls: 0, refusedCalls: 0, toolTimeMs: 0, agentMs: 0 };
  }
  const terminate = new AbortController();
  /** Frees this rollout's turn to start a worker (start-gate.ts), once the worker has started. */
  const slot: { release?: (() => void) | null } = {};
  // What the worker's messages tell (its start, why it ended itself), and the grace period's timer.
  const state: PhaseState = {
    onStart: () => {
      slot.release?.();
      clearTimeout(startTimer);
      guard.startClock();
    },
  };

  const guard = new LimitGuard(limits, (fired) => {
    trace.add({ type: 'limit_exceeded', limit: fired.limit, message: fired.reason });
    // Once any limit fired, the gateway lets no new model request through either.
    opts.models?.session.stop(fired.limit, fired.reason);
    channel.abort(fired.reason);
    // Also before the worker started (a cancel): the abort reaches the agent once it has, and it
    // gets its grace period to return what it has.
    state.graceTimer = setTimeout(() => terminate.abort(fired.reason), limits.graceMs);
  });
  // A model budget spent (maxModelRequests, maxTokens) ends the rollout as model_limit.
  opts.models?.session.onLimit((limit, reason) => guard.fire({ termination: 'model_limit', limit, reason }));
  const calls = createCallPath(guard, opts.toolbox, trace);
  const usage = new UsageTally();
  // JSON escaping can make text up to 6× longer than its bytes (\u0000), hence the factor.
  const maxChars = 6 * Math.max(limits.maxMessageBytes, limits.maxOutputBytes) + MESSAGE_ENVELOPE_BYTES;
  const link = opts.pool.link();
  const channel = new HostChannel(
    link.host,
    channelHandlers({ calls, guard, usage, trace, prepared, conversation: opts.conversation, state }),
    maxChars,
    { bytes: limits.maxMessageBytes },
  );

  // A simulated user that fails makes the run an error: the agent is told to stop, then stopped.
  opts.conversation?.onError((message) => {
    const reason = `the simulated user failed: ${message}`;
    channel.abort(reason);
    state.graceTimer ??= setTimeout(() => terminate.abort(reason), limits.graceMs);
  });

  const onCancel = (): void => guard.fire({ termination: 'cancelled', limit: 'cancel', reason: 'cancelled' });
  if (opts.signal?.aborted) onCancel();
  opts.signal?.addEventListener('abort', onCancel, { once: true });

  // From the moment the rollout asks for a worker, the worker has a limited time to start: one
  // that never does (a pool whose workers die as they start, a sandbox that does not come up) ends
  // the rollout all the same. The agent's own clock starts when it has (a sandbox booting for the
  // first rollout, on a loaded machine, does not eat into the agent's time).
  // Workers start a few at a time per runner (start-gate.ts): the start clock runs from this
  // rollout's turn. One cancelled while it waits never asks for a worker. (Reused workers are
  // started already: an agent's start there is a module instance, not a thread.)
  slot.release = opts.pool.reusesWorkers === true ? () => {} : await startGate(opts.pool).acquire(terminate.signal).catch(() => null);
  const startMs = workerStartMs(limits.timeoutMs);
  const startTimer = setTimeout(() => {
    if (state.startedAt === undefined) terminate.abort(`the agent's worker did not start within ${startMs} ms`);
  }, startMs);
  const run = slot.release === null ? Promise.resolve<WorkerExit>({ kind: 'terminated', message: 'the rollout ended before its worker started' }) : opts.pool.run(
    workerTask(opts, prepared),
    link,
    limits.memoryMb,
    terminate.signal,
    opts.env ?? {},
    prepared.readable,
    // A runner that cannot start the worker (a sandbox that failed to start) is a worker gone.
  ).catch((err: unknown): WorkerExit => ({ kind: 'exited', message: `the agent's worker could not start: ${describeError(err)}` }));
  // Whatever the runner does, a terminated worker is gone for this rollout within a bound: one
  // that never answers (a sandbox stuck as it starts) cannot hold the rollout, or an eval, forever.
  const exit = Promise.race([run, goneAfterTerminate(run, terminate.signal)]);
  // A worker that never reports its start frees the slot when it is taken as gone (a runner that
  // never answers must not hold a turn to start for ever).
  void exit.then(() => slot.release?.());

  return await phaseEnded({ opts, prepared, channel, exit, terminate, guard, calls, usage, state, startTimer, startMs, onCancel });
}

/** What runAgent hands on to wait for the end of its worker. */
interface Running {
  opts: AgentPhaseOptions;
  prepared: PreparedAgent;
  channel: HostChannel;
  exit: Promise<WorkerExit>;
  terminate: AbortController;
  guard: LimitGuard;
  calls: ReturnType<typeof createCallPath>;
  usage: UsageTally;
  state: PhaseState;
  startTimer: NodeJS.Timeout;
  startMs: number;
  onCancel: () => void;
}

/**
 * The end of the agent's part: the completion, or the worker gone first; then its exit, the calls
 * still in flight, and how it ended. Not in runAgent, which then stays small enough for V8 to
 * optimize cheaply (this part runs once per rollout as each ends, and made runAgent hot).
 */
async function phaseEnded({ opts, prepared, channel, exit, terminate, guard, calls, usage, state, startTimer, startMs, onCancel }: Running): Promise<AgentPhase> {
  const { limits, trace } = opts;
  // Either the completion arrives, or the worker goes away first. In the second case, wait for
  // the port to drain and close: messages sent before the exit are still delivered.
  let done = await Promise.race([channel.done, exit.then(() => undefined)]);
  const endedAt = performance.now();
  if (done === undefined) {
    await within(channel.closed, PORT_DRAIN_MS);
    done = await Promise.race([channel.done, Promise.resolve(null)]);
  }
  // A worker that reported but does not leave on its own is terminated.
  if ((await within(exit, limits.graceMs)) === TIMED_OUT) terminate.abort('the worker did not exit after the agent finished');
  const exitInfo = await exit;

  guard.stop();
  clearTimeout(startTimer);
  clearTimeout(state.graceTimer);
  opts.signal?.removeEventListener('abort', onCancel);
  // Calls taken before the end still finish, so the world is final before it is diffed.
  await within(channel.settle(), INFLIGHT_SETTLE_MS);
  channel.close();

  return endOfPhase({
    done,
    exit: exitInfo,
    base: {
      toolCalls: guard.toolCalls,
      refusedCalls: guard.refusedCalls,
      toolTimeMs: calls.toolTimeMs,
      agentMs: round(endedAt - (state.startedAt ?? endedAt)),
      usage: usage.total,
      ...(exitInfo.isolation ? { isolation: exitInfo.isolation } : {}),
    },
    fired: guard.fired?.termination,
    started: state.startedAt !== undefined,
    startTimedOut: terminate.signal.aborted ? startMs : undefined,
    exitReason: state.exitReason,
    limits,
    trace,
    prepared,
  });
}

/** The rollout as its worker gets it. */
function workerTask(opts: AgentPhaseOptions, prepared: PreparedAgent): Omit<WorkerTask, 'brand' | 'port' | 'exitAfter'> {
  return {
    agentPath: prepared.modulePath,
    agentFile: opts.agentPath,
    ...(prepared.script ? { agentScript: true } : {}),
    ...(prepared.commonJs ? { agentCommonJs: true } : {}),
    instruction: opts.instruction,
    tools: opts.toolbox.schemas,
    limits: opts.limits,
    options: opts.agentOptions ?? {},
    guard: opts.guard ?? [],
    ...(opts.models ? { gateway: opts.models.task } : {}),
    ...(opts.conversation ? { user: { maxBytes: USER_MESSAGE_MAX_BYTES } } : {}),
  };
}

/** What the channel's handlers note of the worker, for runAgent. */
interface PhaseState {
  /** When the worker took the rollout (performance.now()). */
  startedAt?: number;
  /** The agent's own account of why it ended its worker. */
  exitReason?: string;
  /** Called once, as the worker takes the rollout. */
  onStart: () => void;
  /** Runs out the grace period after a limit fired (or the user failed): then the worker is terminated. */
  graceTimer?: NodeJS.Timeout;
}

/**
 * What the host does with each message of the worker: tool calls, the user, logs (up to a budget
 * per run; past it they are dropped, with one note in the trace), usage, the start and the end.
 */
function channelHandlers({ calls, guard, usage, trace, prepared, conversation, state }: {
  calls: ReturnType<typeof createCallPath>;
  guard: LimitGuard;
  usage: UsageTally;
  trace: Trace;
  prepared: PreparedAgent;
  conversation: Conversation | undefined;
  state: PhaseState;
}): ChannelHandlers {
  const logs = new LogBudget();
  const keepLog = (chars: number): boolean => {
    if (logs.spent) return false;
    if (logs.take(chars)) return true;
    trace.add({ type: 'agent_log', message: LOG_BUDGET_NOTE, stream: 'stderr' });
    return false;
  };
  return {
    call: (msg) => calls.handle(msg),
    busy: (msg, waitingChars) => calls.busy(msg, waitingChars),
    ...(conversation
      ? {
          say: (msg) => {
            if (msg.text === undefined) return { ok: false as const, error: msg.refused ?? { code: 'invalid_input' as const, message: 'user.send takes a string' } };
            // Once a limit fired, the agent is being stopped: the user hears nothing more.
            if (guard.fired) return { ok: false as const, error: { code: 'aborted' as const, message: `message refused: ${guard.fired.reason}` } };
            return conversation.say(msg.text);
          },
        }
      : {}),
    log: (msg) => {
      const text = msg.message.length > LOG_MESSAGE_MAX_CHARS ? `${msg.message.slice(0, LOG_MESSAGE_MAX_CHARS)}${TRUNCATED}` : msg.message;
      if (!keepLog(text.length + (msg.data === undefined ? 0 : (JSON.stringify(msg.data)?.length ?? 0)))) return false;
      // A log can quote a stack (console.error(err)): in the agent's own files too (cut again:
      // a source path can be longer than the compiled module's).
      const message = prepared.mapStack(text).slice(0, LOG_MESSAGE_MAX_CHARS + TRUNCATED.length);
      trace.add({
        type: 'agent_log',
        message,
        ...(msg.data === undefined ? {} : { data: msg.data }),
        ...(msg.stream === undefined ? {} : { stream: msg.stream }),
      });
      return true;
    },
    exiting: (reason) => {
      state.exitReason ??= prepared.mapStack(reason).slice(0, EXIT_REASON_MAX_CHARS);
    },
    started: () => {
      if (state.startedAt !== undefined) return;
      state.startedAt = performance.now();
      state.onStart();
    },
    usage: (msg) => {
      const refused = usage.add(msg);
      if (refused !== null && keepLog(refused.length)) trace.add({ type: 'agent_log', message: `silo: dropped ${refused}`, stream: 'stderr' });
    },
    dropped: (reason) => {
      if (keepLog(reason.length)) trace.add({ type: 'agent_log', message: `silo: dropped ${reason}`, stream: 'stderr' });
    },
  };
}

/** What the end of the agent's part is known by. */
interface PhaseEnd {
  /** The worker's completion: none if it went away first. */
  done: DoneMessage | null | undefined;
  exit: WorkerExit;
  /** The counts and times of the phase. */
  base: Omit<AgentPhase, 'termination' | 'output' | 'outputTruncated' | 'error'>;
  /** The limit that fired, if one did. */
  fired: FiredLimit['termination'] | undefined;
  /** A worker took the rollout. */
  started: boolean;
  /** The worker was terminated (then: the start's time limit, ms). */
  startTimedOut: number | undefined;
  /** The agent's own account of why it ended its worker. */
  exitReason: string | undefined;
  limits: Limits;
  trace: Trace;
  prepared: PreparedAgent;
}

/**
 * How the agent's part ended, and its last trace event. A function of its own, not the end of
 * runAgent: so that runAgent stays small enough for V8 to optimize cheaply once it is hot.
 */
function endOfPhase({ done, exit, base, fired, started, startTimedOut, exitReason, limits, trace, prepared }: PhaseEnd): AgentPhase {
  // (an error naming a file the jail hid says so, as the permission model would have)
  if (done) return { ...base, ...fromCompletion(done, fired, limits, trace, (text) => explainHidden(prepared.mapStack(text), prepared.readable)) };

  // No completion, and no worker ever took the rollout: not the agent's doing (evals retry it).
  if (!started && fired !== 'cancelled') {
    const why = startTimedOut !== undefined ? `within ${startTimedOut} ms` : `(${exit.message})`;
    const error = { code: 'crashed', message: `the agent's worker never started ${why}` };
    trace.add({ type: 'agent_threw', error });
    return { ...base, termination: 'crashed', output: null, outputTruncated: false, error };
  }
  // No completion: the worker was terminated after a limit, ran out of memory, or died.
  if (fired) return { ...base, termination: fired, output: null, outputTruncated: false };
  if (exit.kind === 'out_of_memory') {
    const message = `the agent's worker ran out of memory (memoryMb ${limits.memoryMb})`;
    trace.add({ type: 'limit_exceeded', limit: 'memoryMb', message });
    return { ...base, termination: 'out_of_memory', output: null, outputTruncated: false, error: { code: 'out_of_memory', message } };
  }
  const error =
    exitReason === undefined
      ? { code: 'crashed', message: `the agent's worker ended before the agent returned (${exit.message})` }
      : { code: 'agent_exit', message: `the agent ended its worker before returning: ${exitReason}` };
  trace.add({ type: 'agent_threw', error });
  return { ...base, termination: 'crashed', output: null, outputTruncated: false, error };
}

function fromCompletion(
  done: DoneMessage,
  fired: Termination | undefined,
  limits: Limits,
  trace: Trace,
  mapStack: (text: string) => string,
): Pick<AgentPhase, 'termination' | 'output' | 'outputTruncated' | 'outputError' | 'error'> {
  if (done.outcome === 'load_error') {
    const error = capError(done.error, 'agent_load_error', mapStack);
    trace.add({ type: 'agent_threw', error });
    return { termination: 'load_error', output: null, outputTruncated: false, error };
  }
  if (done.outcome === 'threw') {
    const error = capError(done.error, 'agent_threw', mapStack);
    trace.add({ type: 'agent_threw', error });
    return { termination: (fired as AgentPhase['termination'] | undefined) ?? 'threw', output: null, outputTruncated: false, error };
  }
  // The worker already cut the output; the host trusts nothing it sends and cuts again.
  const text = typeof done.output === 'string' ? done.output : null;
  const captured = text === null ? { output: null, truncated: false } : capText(text, limits.maxOutputBytes);
  const truncated = captured.truncated || done.outputTruncated === true;
  // (one line: it is the run's error message too; the worker's text is the agent's to shape, and
  // the channel cut it to AGENT_NOTE_MAX_CHARS)
  const outputError = typeof done.outputError === 'string' ? done.outputError.replace(/\s*\n\s*/g, ' ') : undefined;
  trace.add({
    type: 'agent_returned',
    output: captured.output,
    ...(truncated ? { outputTruncated: true } : {}),
    ...(outputError === undefined ? {} : { outputError }),
  });
  return {
    termination: (fired as AgentPhase['termination'] | undefined) ?? 'returned',
    output: captured.output,
    outputTruncated: truncated,
    ...(outputError === undefined ? {} : { outputError }),
  };
}

/**
 * How long a worker may take to start, from the moment its rollout asks for it: the rollout's
 * timeoutMs, but at least WORKER_START_MIN_MS (a sandbox boots in ~0.3 s, in ~2 s on a loaded
 * machine, so a short time limit must not turn a slow start into a crash) and at most
 * WORKER_START_MAX_MS (a worker that has not started by then will not).
 */
export function workerStartMs(timeoutMs: number): number {
  return Math.min(Math.max(timeoutMs, WORKER_START_MIN_MS), WORKER_START_MAX_MS);
}

/**
 * Resolves WORKER_GONE_MS after `terminate` fires if `run` has not settled by then: the runner has
 * had time to end the worker (or, in the sandbox, the whole sandbox), so the worker is taken as
 * gone. Its timer holds the process only while it waits for a runner that has not answered.
 */
function goneAfterTerminate(run: Promise<WorkerExit>, terminate: AbortSignal): Promise<WorkerExit> {
  let settled = false;
  let timer: NodeJS.Timeout | undefined;
  return new Promise((resolve) => {
    const wait = (): void => {
      if (!settled) timer = setTimeout(() => resolve({ kind: 'exited', message: 'the worker did not end when it was terminated' }), WORKER_GONE_MS);
    };
    void run.then(() => {
      settled = true;
      clearTimeout(timer);
      terminate.removeEventListener('abort', wait);
    });
    if (terminate.aborted) wait();
    else terminate.addEventListener('abort', wait, { once: true });
  });
}

/** The worker's report of an error, checked, with positions in the agent's own files (see source-map.ts). */
function capError(error: ErrorInfo | undefined, code: string, mapStack: (text: string) => string): ErrorInfo {
  // The worker's report is not trusted: a message that is not text is not turned into text.
  const message = mapStack((typeof error?.message === 'string' ? error.message : 'unknown error').slice(0, LOG_MESSAGE_MAX_CHARS)).slice(0, LOG_MESSAGE_MAX_CHARS);
  const out: ErrorInfo = { code: typeof error?.code === 'string' ? error.code : code, message };
  if (typeof error?.stack === 'string') out.stack = mapStack(error.stack.slice(0, LOG_MESSAGE_MAX_CHARS)).slice(0, LOG_MESSAGE_MAX_CHARS);
  return out;
}
