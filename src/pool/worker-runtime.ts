/**
 * The worker side of one rollout: load the agent module, hand it the instruction, the tool
 * schemas, a port-backed `callTool`, a signal and `log`, and send its completion on the same
 * port as its calls. Everything the agent sends is JSON text.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { format } from 'node:util';
import { pathToFileURL } from 'node:url';
import { createRequire } from 'node:module';
import { BRAND, type HostMessage, type WorkerMessage, type WorkerTask } from '../protocol.js';
import { LOG_BUDGET_NOTE, LogBudget } from '../rollout/logs.js';
import { captureOutput } from '../rollout/output.js';
import { describeError, describeModuleError, toErrorInfo } from '../errors.js';
import { esModuleExports } from '../typescript.js';
import { withRolloutEnv } from './rollout-env.js';
import { loadScript } from './script.js';
import type { AgentArgs, ToolResult, UserChannel, UserReply } from '../types.js';
import { closeProcessWide, processWideProblem } from './process-wide.js';

export { BRAND, closeProcessWide };

type Send = (msg: WorkerMessage) => void;

// Taken before any agent code runs: agent code shares this realm and may replace process.exit.
const exitThread = process.exit.bind(process);
/** Never settles; see finish(). */
const NEVER = new Promise<never>(() => {});

/** Runs one agent to completion. In single-use mode the worker thread exits afterwards. */
export async function runAgentTask(task: WorkerTask): Promise<void> {
  // Done already while the worker warmed up (workers/agent.cts); a no-op then.
  closeProcessWide();
  try {
    await runOnce(task);
  } catch (err) {
    // Only an agent that broke something the runtime relies on gets here: its doing, so say so.
    // A single-use worker must not report it to the pool: a settled task hands the thread back.
    const reason = `the agent broke Silo's worker runtime: ${describeError(err)}`.slice(0, 1_000);
    for (const reporter of exitReporters) {
      try {
        reporter({ brand: BRAND, type: 'exiting', reason });
      } catch {
        // the port itself is what broke
      }
    }
    if (!task.exitAfter) throw err;
  }
  return finish(task);
}

async function runOnce(task: WorkerTask): Promise<void> {
  const { port } = task;
  const pending = new Map<number, (result: ToolResult) => void>();
  const replies = new Map<number, (result: UserReply) => void>();
  const controller = new AbortController();
  let finished = false;
  let nextId = 1;

  const send: Send = (msg) => {
    if (!finished) port.postMessage(JSON.stringify(msg));
  };

  // The listener also keeps the thread alive while an agent awaits a promise that never
  // settles, so such an agent times out instead of exiting as if it had crashed.
  port.on('message', (msg: HostMessage) => {
    if (msg?.brand !== BRAND) return;
    if (msg.type === 'result') {
      const resolve = pending.get(msg.id);
      pending.delete(msg.id);
      resolve?.(msg.result);
    } else if (msg.type === 'reply') {
      const resolve = replies.get(msg.id);
      replies.delete(msg.id);
      resolve?.(msg.result);
    } else if (msg.type === 'abort' && !controller.signal.aborted) {
      controller.abort(new Error(msg.reason));
    }
  });

  // The same budget the host enforces: an agent that logs in a loop stops sending here.
  const logs = new LogBudget();
  const sendLog: Send = (msg) => {
    if (msg.type !== 'log' || logs.spent) return;
    if (logs.take(msg.message.length)) send(msg);
    else send({ brand: BRAND, type: 'log', message: LOG_BUDGET_NOTE, stream: 'stderr' });
  };
  captureConsole();
  reportAgentExits(send);
  // The wall clock starts now, so an agent module that never finishes loading also times out.
  send({ brand: BRAND, type: 'started' });

  const callTool = (name: unknown, input?: unknown): Promise<ToolResult> => {
    const id = nextId++;
    const text = encodeCall(id, String(name), input, task.limits.maxMessageBytes);
    return new Promise<ToolResult>((resolve) => {
      pending.set(id, resolve);
      if (!finished) port.postMessage(text);
    });
  };

  // Messages to the simulated user share the port (and the order) with the tool calls.
  const user: UserChannel | undefined = task.user && {
    send: (text: unknown): Promise<UserReply> => {
      const id = nextId++;
      const message = encodeSay(id, text, task.user!.maxBytes);
      return new Promise<UserReply>((resolve) => {
        replies.set(id, resolve);
        send(message);
      });
    },
  };

  const log = (message: unknown, data?: unknown): void => {
    const msg: WorkerMessage = { brand: BRAND, type: 'log', message: String(message) };
    if (data !== undefined) msg.data = jsonSafe(data);
    sendLog(msg);
  };

  const reportUsage = (usage: unknown): void => {
    const u = (typeof usage === 'object' && usage !== null ? usage : {}) as Record<string, unknown>;
    // The host checks every number again; this only keeps an honest agent's report well-formed.
    send({ brand: BRAND, type: 'usage', inputTokens: Number(u.inputTokens), outputTokens: Number(u.outputTokens), requests: u.requests === undefined ? 1 : Number(u.requests) });
  };

  const done = (msg: Omit<Extract<WorkerMessage, { type: 'done' }>, 'brand' | 'type'>): void => {
    send({ brand: BRAND, type: 'done', ...msg });
    finished = true;
  };

  // Console output finds its rollout through the async context (a reused worker may run several).
  // The rollout's own variables (its gateway URL and token) are set before the agent loads.
  if (task.exitAfter) {
    // A single-use thread runs one rollout: no async context needed (it would slow every await).
    soleLog = sendLog;
    await withRolloutEnv(task.gateway?.env, false, () => runAgent(task, callTool, log, reportUsage, controller.signal, done, user));
  } else {
    await currentLog.run(sendLog, () => withRolloutEnv(task.gateway?.env, true, () => runAgent(task, callTool, log, reportUsage, controller.signal, done, user)));
  }
  exitReporters.delete(send);
}

async function runAgent(
  task: WorkerTask,
  callTool: AgentArgs['callTool'],
  log: AgentArgs['log'],
  reportUsage: AgentArgs['reportUsage'],
  signal: AbortSignal,
  done: (msg: Omit<Extract<WorkerMessage, { type: 'done' }>, 'brand' | 'type'>) => void,
  user: UserChannel | undefined,
): Promise<void> {
  let agent: unknown;
  try {
    const refused = processWideProblem() ?? guardProblem(task.guard);
    if (refused) throw Object.assign(new Error(refused), { code: 'agent_load_error' });
    const mod = (task.agentScript === true ? loadScript(task.agentPath) : await importAgent(task.agentPath, !task.exitAfter, task.agentCommonJs === true)) as { default?: unknown };
    agent = mod.default;
    if (typeof agent !== 'function') {
      throw Object.assign(
        new Error(
          `it has no default-export function; export one: \`export default async function agent({ instruction, tools, callTool, signal, log }) { ... }\``,
        ),
        { code: 'agent_load_error' },
      );
    }
  } catch (err) {
    const info = toErrorInfo(err, 'agent_load_error');
    const error = { ...info, message: `cannot load ${task.agentFile}: ${describeModuleError(err, task.agentFile, task.agentCommonJs === true)}` };
    done({ outcome: 'load_error', output: null, outputTruncated: false, error });
    return;
  }

  const args: AgentArgs = {
    instruction: task.instruction,
    tools: task.tools,
    callTool,
    signal,
    log,
    options: task.options,
    reportUsage,
    ...(user ? { user } : {}),
  };
  try {
    const value = await (agent as (a: AgentArgs) => unknown)(args);
    const captured = captureOutput(value, task.limits.maxOutputBytes);
    done({
      outcome: 'returned',
      output: captured.output,
      outputTruncated: captured.truncated,
      ...(captured.error === undefined ? {} : { outputError: captured.error }),
    });
  } catch (err) {
    done({ outcome: 'threw', output: null, outputTruncated: false, error: toErrorInfo(err, 'agent_threw') });
  }
}

function finish(task: WorkerTask): Promise<void> | void {
  if (task.exitAfter) {
    // The completion is already queued on the port; leaving now means no later rollout can
    // ever run in this thread. The pool starts a replacement in the background.
    try {
      exitThread(0);
    } catch {
      // An 'exit' listener of the agent's threw.
    }
    // Still here: the agent disabled leaving (it replaced process.reallyExit, say). The task
    // never settles, so the pool cannot reuse the thread; the host terminates it after graceMs.
    return NEVER;
  }
  task.port.close();
}


/**
 * Encodes a call as JSON text now, so later changes to the input (or shared memory) cannot reach
 * the host. The input is serialised once and its text placed in the message as it is: the same
 * text as JSON.stringify of the whole message (the host parses and checks it either way).
 */
export function encodeCall(id: number, name: string, input: unknown, maxBytes: number): string {
  const head = `{"brand":${JSON.stringify(BRAND)},"type":"call","id":${id},"name":${JSON.stringify(name)}`;
  let text: string | undefined;
  try {
    text = JSON.stringify(input === undefined ? {} : input);
  } catch (err) {
    return refusedCall(head, 0, 'unserialisable', (err as Error).message);
  }
  if (text === undefined) return refusedCall(head, 0, 'unserialisable', `a ${typeof input} has no JSON form`);
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > maxBytes) return refusedCall(head, bytes, 'too_large', `input is ${bytes} bytes`);
  return `${head},"input":${text},"inputBytes":${bytes}}`;
}

function refusedCall(head: string, inputBytes: number, kind: 'unserialisable' | 'too_large', message: string): string {
  return `${head},"inputBytes":${inputBytes},"inputError":${JSON.stringify({ kind, message })}}`;
}

/** Encodes a message to the user now; text that is not a string or is over `maxBytes` is refused here (the host checks again). */
function encodeSay(id: number, text: unknown, maxBytes: number): WorkerMessage {
  const base = { brand: BRAND, type: 'say' as const, id };
  if (typeof text !== 'string') return { ...base, refused: { code: 'invalid_input', message: `user.send takes a string (got ${text === null ? 'null' : typeof text})` } };
  // Characters first (UTF-8 takes at least a byte each): a huge string is not encoded to be measured.
  if (text.length > maxBytes || Buffer.byteLength(text, 'utf8') > maxBytes) {
    return { ...base, refused: { code: 'too_large', message: `the message is over the ${maxBytes}-byte cap of one message to the user; send a shorter one` } };
  }
  return { ...base, text };
}

/**
 * An agent that ends its own worker (process.exit, an exception thrown from a stray callback)
 * says so first, so the host records the crash as the agent's doing and does not retry it as an
 * infrastructure failure. The runtime's own exit (finish) uses exitThread and says nothing.
 */
function reportAgentExits(send: Send): void {
  // Installed once per thread; every rollout running in the thread hears of its end.
  exitReporters.add(send);
  if (exitReportersInstalled) return;
  exitReportersInstalled = true;
  const report = (reason: string): void => {
    for (const reporter of exitReporters) reporter({ brand: BRAND, type: 'exiting', reason: reason.slice(0, 1_000) });
  };
  process.exit = ((code?: number | string | null) => {
    report(`the agent called process.exit(${String(code ?? '')})`);
    return exitThread(code ?? undefined);
  }) as typeof process.exit;
  // A monitor only watches: an agent (or its SDK) that handles its own uncaught exceptions keeps
  // running; otherwise Node ends the thread as usual, and the host has been told why first.
  process.on('uncaughtExceptionMonitor', (err) => {
    if (process.listenerCount('uncaughtException') > 0) return;
    report(`uncaught exception in the agent: ${describeError(err)}`);
  });
}

/** The senders of the rollouts running in this thread (one, unless workers are reused). */
const exitReporters = new Set<Send>();
let exitReportersInstalled = false;

/** The log sender of the rollout whose code is running. */
const currentLog = new AsyncLocalStorage<Send>();
/** The log sender of a single-use thread's one rollout. */
let soleLog: Send | undefined;
let consoleCaptured = false;

/**
 * Routes the agent's console and stdout/stderr into the trace of the rollout whose code wrote it,
 * instead of Silo's own output. Output from outside any rollout's async context is dropped.
 */
function captureConsole(): void {
  if (consoleCaptured) return;
  consoleCaptured = true;
  const send: Send = (msg) => (soleLog ?? currentLog.getStore())?.(msg);
  const emit = (stream: 'stdout' | 'stderr') => (...args: unknown[]) => {
    send({ brand: BRAND, type: 'log', message: format(...args), stream });
  };
  for (const method of ['log', 'info', 'debug', 'trace'] as const) console[method] = emit('stdout');
  for (const method of ['warn', 'error'] as const) console[method] = emit('stderr');
  const writer = (stream: 'stdout' | 'stderr') =>
    function write(chunk: unknown, ...rest: unknown[]): boolean {
      const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk as Uint8Array).toString('utf8');
      send({ brand: BRAND, type: 'log', message: text.replace(/\n$/, ''), stream });
      const callback = rest.find((r) => typeof r === 'function') as (() => void) | undefined;
      callback?.();
      return true;
    };
  process.stdout.write = writer('stdout') as typeof process.stdout.write;
  process.stderr.write = writer('stderr') as typeof process.stderr.write;
}

let instances = 0;

/**
 * `fresh`: a new module instance even if this thread loaded the agent before (reused workers).
 * TypeScript agents arrive compiled (see src/pool/compile.ts).
 */
async function importAgent(path: string, fresh: boolean, commonJs: boolean): Promise<unknown> {
  if (fresh && commonJs) {
    // CommonJS modules are cached by file name, whatever the query: a fresh instance is one
    // required again with the entry's cache dropped (its own requires stay shared, as an ES
    // module's imports do).
    const require = createRequire(path);
    // Cached under the name require resolves it to (a link's target, say).
    delete require.cache[require.resolve(path)];
    return esModuleExports({ default: require(path) as unknown });
  }
  const url = pathToFileURL(path);
  // Modules are cached by URL; a query makes a new one (its own imports stay shared).
  if (fresh) url.searchParams.set('silo-instance', String(++instances));
  return esModuleExports((await import(url.href)) as Record<string, unknown>);
}


/**
 * Why this worker must not run the agent, or null: its permissions are not in force, or it can
 * read a folder it must not (the task file's, the artifacts').
 */
export function guardProblem(guard: WorkerTask['guard']): string | null {
  const permission = (process as { permission?: { has(scope: string, reference?: string): boolean } }).permission;
  if (!permission || permission.has('fs.write') || permission.has('child')) {
    return "its worker is not narrowed (Node's permission model is not in force), so it is not run";
  }
  for (const { path, what } of Array.isArray(guard) ? guard : []) {
    if (permission.has('fs.read', path)) {
      return `its worker could read ${what} (${path}), because the agent's folder or a package folder it may read contains it; keep the agent in a folder of its own, outside the task files and the artifacts`;
    }
  }
  return null;
}

function jsonSafe(value: unknown): unknown {
  try {
    const text = JSON.stringify(value);
    return text === undefined ? String(value) : (JSON.parse(text) as unknown);
  } catch {
    return String(value);
  }
}
