/**
 * Steps 4–6: load the agent in a worker of its own, call it once, take its output. Limits fire
 * the agent's signal, wait the grace period, then terminate the worker. The termination says
 * how the agent's part ended.
 */
import { performance } from 'node:perf_hooks';
import { HostChannel, type DoneMessage } from '../pool/channel.js';
import type { AgentRunner, WorkerExit } from '../pool/pool.js';
import { prepareAgent, type PreparedAgent, type PreparedAgents } from '../pool/compile.js';
import type { Guard } from '../pool/permissions.js';
import { describeError, SiloError } from '../errors.js';
import { INFLIGHT_SETTLE_MS, LOG_MESSAGE_MAX_CHARS, MESSAGE_ENVELOPE_BYTES, PORT_DRAIN_MS } from '../options.js';
import { LOG_BUDGET_NOTE, LogBudget } from './logs.js';
import type { AgentOptions, ErrorInfo, Limits, Termination } from '../types.js';
import type { WorkerTask } from '../protocol.js';
import { UsageTally, type Usage } from './usage.js';
import { createCallPath } from './call.js';
import { LimitGuard } from './limits.js';
import { capText } from './output.js';
import type { Toolbox } from './tools.js';
import { round, type Trace } from './trace.js';
import { TIMED_OUT, within } from '../time.js';
import type { ModelSession } from '../gateway/session.js';

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
  /** Why the agent failed to load, threw or crashed. */
  error?: ErrorInfo;
  toolCalls: number;
  refusedCalls: number;
  toolTimeMs: number;
  /** From the worker taking the rollout to the agent's end, ms. */
  agentMs: number;
  /** Model usage the agent reported, if it reported any. */
  usage?: Usage | undefined;
}

/** Steps 4–6: runs the agent once in a worker of its own, under its limits, and takes its output. */
export async function runAgent(opts: AgentPhaseOptions): Promise<AgentPhase> {
  const { limits, trace } = opts;
  // A TypeScript agent is compiled here, on the host (its narrowed worker could not).
  let prepared: PreparedAgent;
  try {
    prepared = await (opts.prepared ? opts.prepared.get(opts.agentPath) : prepareAgent(opts.agentPath));
  } catch (err) {
    const error = { code: 'agent_load_error', message: err instanceof SiloError ? err.message : `cannot load ${opts.agentPath}: ${describeError(err)}` };
    trace.add({ type: 'agent_threw', error });
    return { termination: 'load_error', output: null, outputTruncated: false, error, toolCalls: 0, refusedCalls: 0, toolTimeMs: 0, agentMs: 0 };
  }
  const terminate = new AbortController();
  let graceTimer: NodeJS.Timeout | undefined;
  let startedAt: number | undefined;
  /** Set when the agent ended its own worker. */
  let exitReason: string | undefined;

  const guard = new LimitGuard(limits, (fired) => {
    trace.add({ type: 'limit_exceeded', limit: fired.limit, message: fired.reason });
    // Once any limit fired, the gateway lets no new model request through either.
    opts.models?.session.stop(fired.limit, fired.reason);
    channel.abort(fired.reason);
    graceTimer = setTimeout(() => terminate.abort(fired.reason), limits.graceMs);
  });
  // A model budget spent (maxModelRequests, maxTokens) ends the rollout as model_limit.
  opts.models?.session.onLimit((limit, reason) => guard.fire({ termination: 'model_limit', limit, reason }));
  const calls = createCallPath(guard, opts.toolbox, trace);
  const usage = new UsageTally();
  // Logs are kept up to a budget per run; past it they are dropped, with one note in the trace.
  const logs = new LogBudget();
  const keepLog = (chars: number): boolean => {
    if (logs.spent) return false;
    if (logs.take(chars)) return true;
    trace.add({ type: 'agent_log', message: LOG_BUDGET_NOTE, stream: 'stderr' });
    return false;
  };
  // JSON escaping can make text up to 6× longer than its bytes (\u0000), hence the factor.
  const maxChars = 6 * Math.max(limits.maxMessageBytes, limits.maxOutputBytes) + MESSAGE_ENVELOPE_BYTES;
  const link = opts.pool.link();
  const channel = new HostChannel(
    link.host,
    {
      call: (msg) => calls.handle(msg),
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
        exitReason ??= prepared.mapStack(reason).slice(0, EXIT_REASON_MAX_CHARS);
      },
      started: () => {
        startedAt ??= performance.now();
        guard.startClock();
      },
      usage: (msg) => {
        const refused = usage.add(msg);
        if (refused !== null && keepLog(refused.length)) trace.add({ type: 'agent_log', message: `silo: dropped ${refused}`, stream: 'stderr' });
      },
      dropped: (reason) => {
        if (keepLog(reason.length)) trace.add({ type: 'agent_log', message: `silo: dropped ${reason}`, stream: 'stderr' });
      },
    },
    maxChars,
    { bytes: limits.maxMessageBytes },
  );

  const onCancel = (): void => guard.fire({ termination: 'cancelled', limit: 'cancel', reason: 'cancelled' });
  if (opts.signal?.aborted) onCancel();
  opts.signal?.addEventListener('abort', onCancel, { once: true });

  const exit = opts.pool.run(
    {
      agentPath: prepared.modulePath,
      agentFile: opts.agentPath,
      instruction: opts.instruction,
      tools: opts.toolbox.schemas,
      limits,
      options: opts.agentOptions ?? {},
      guard: opts.guard ?? [],
      ...(opts.models ? { gateway: opts.models.task } : {}),
    },
    link,
    limits.memoryMb,
    terminate.signal,
    opts.env ?? {},
    prepared.readable,
    // A runner that cannot start the worker (a sandbox that failed to start) is a worker gone.
  ).catch((err: unknown): WorkerExit => ({ kind: 'exited', message: `the agent's worker could not start: ${describeError(err)}` }));

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
  clearTimeout(graceTimer);
  opts.signal?.removeEventListener('abort', onCancel);
  // Calls taken before the end still finish, so the world is final before it is diffed.
  await within(channel.settle(), INFLIGHT_SETTLE_MS);
  channel.close();

  const base = {
    toolCalls: guard.toolCalls,
    refusedCalls: guard.refusedCalls,
    toolTimeMs: calls.toolTimeMs,
    agentMs: round(endedAt - (startedAt ?? endedAt)),
    usage: usage.total,
  };
  const fired = guard.fired?.termination;

  if (done) return { ...base, ...fromCompletion(done, fired, limits, trace, prepared.mapStack) };

  // No completion: the worker was terminated after a limit, ran out of memory, or died.
  if (fired) return { ...base, termination: fired, output: null, outputTruncated: false };
  if (exitInfo.kind === 'out_of_memory') {
    const message = `the agent's worker ran out of memory (memoryMb ${limits.memoryMb})`;
    trace.add({ type: 'limit_exceeded', limit: 'memoryMb', message });
    return { ...base, termination: 'out_of_memory', output: null, outputTruncated: false, error: { code: 'out_of_memory', message } };
  }
  const error =
    exitReason === undefined
      ? { code: 'crashed', message: `the agent's worker ended before the agent returned (${exitInfo.message})` }
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
): Pick<AgentPhase, 'termination' | 'output' | 'outputTruncated' | 'error'> {
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
  const outputError = typeof done.outputError === 'string' ? done.outputError : undefined;
  trace.add({
    type: 'agent_returned',
    output: captured.output,
    ...(truncated ? { outputTruncated: true } : {}),
    ...(outputError === undefined ? {} : { outputError }),
  });
  return { termination: (fired as AgentPhase['termination'] | undefined) ?? 'returned', output: captured.output, outputTruncated: truncated };
}

/** The worker's report of an error, checked, with positions in the agent's own files (see source-map.ts). */
function capError(error: ErrorInfo | undefined, code: string, mapStack: (text: string) => string): ErrorInfo {
  // The worker's report is not trusted: a message that is not text is not turned into text.
  const message = mapStack((typeof error?.message === 'string' ? error.message : 'unknown error').slice(0, LOG_MESSAGE_MAX_CHARS)).slice(0, LOG_MESSAGE_MAX_CHARS);
  const out: ErrorInfo = { code: typeof error?.code === 'string' ? error.code : code, message };
  if (typeof error?.stack === 'string') out.stack = mapStack(error.stack.slice(0, LOG_MESSAGE_MAX_CHARS)).slice(0, LOG_MESSAGE_MAX_CHARS);
  return out;
}
