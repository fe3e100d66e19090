/**
 * The host side of a rollout's port. Parses the worker's JSON text (size-capped, `__proto__`
 * refused), runs calls one at a time in arrival order, and stops taking anything once the
 * completion has arrived: the completion travels on the same port as the calls, so a call made
 * after the agent returned can never be taken for one made before.
 */
import { describeError } from '../errors.js';
import type { HostEnd } from './ends.js';
import { AGENT_NOTE_MAX_CHARS, CALLS_WAITING_MAX_CHARS, MAX_INPUT_DEPTH, MAX_TOOL_NAME_CHARS } from '../options.js';
import { BRAND, type HostMessage, type WorkerMessage } from '../protocol.js';
import type { ToolResult, UserReply } from '../types.js';

export type CallMessage = Extract<WorkerMessage, { type: 'call' }>;
export type DoneMessage = Extract<WorkerMessage, { type: 'done' }>;
export type SayMessage = Extract<WorkerMessage, { type: 'say' }>;

/** What the host does with each kind of message from the worker. */
export interface ChannelHandlers {
  /** A tool call; its result is sent back to the worker. */
  call(msg: CallMessage): Promise<ToolResult> | ToolResult;
  /**
   * A call that came while more than CALLS_WAITING_MAX_CHARS of calls were waiting their turn:
   * answered at once with the result returned here, unrun (its input is not kept).
   */
  busy(msg: CallMessage, waitingChars: number): ToolResult;
  /**
   * A message to the simulated user (queued with the calls, in arrival order); its reply is sent
   * back. Absent: the task has no user, and every message is refused.
   */
  say?(msg: SayMessage): Promise<UserReply> | UserReply;
  /** An agent log; returns false once the run's log budget is spent (later logs are skipped unparsed). */
  log(msg: Extract<WorkerMessage, { type: 'log' }>): boolean;
  /** The worker has taken the rollout: the wall clock starts. */
  started(): void;
  /** The agent reported model usage (unchecked numbers: the handler validates them). */
  usage(msg: Extract<WorkerMessage, { type: 'usage' }>): void;
  /** The agent is ending its worker; a crash that follows is the agent's doing. */
  exiting(reason: string): void;
  /** A message that broke the protocol (oversized, not JSON, unknown); it was dropped. */
  dropped(reason: string): void;
}

/** The host end of one rollout's port (see the file comment). */
export class HostChannel {
  /** Resolves with the completion, or null if the port closed without one. */
  readonly done: Promise<DoneMessage | null>;
  /** Resolves when the port has closed (the worker is gone or the channel was closed). */
  readonly closed: Promise<void>;

  readonly #end: HostEnd;
  readonly #maxChars: number;
  readonly #inputCaps: InputCaps;
  #finished = false;
  /** Set once the log budget is spent: log messages are then skipped before parsing. */
  #skipLogs = false;
  /** Set by close(): calls still waiting their turn are dropped, never handled. */
  #closed = false;
  /** Settles when every call and message taken so far has been answered. */
  #queue: Promise<unknown> = Promise.resolve();
  /** Calls and messages taken whose answer is not yet sent. */
  #unanswered = 0;
  /** Characters of the calls taken but not yet run. */
  #waitingChars = 0;
  #resolveDone!: (msg: DoneMessage | null) => void;

  /**
   * `maxChars` caps one message's JSON text (UTF-16 units); longer messages are dropped unparsed.
   * `inputCaps` bound a call's input as the host measures it, whatever the worker claims.
   */
  constructor(end: HostEnd, handlers: ChannelHandlers, maxChars: number, inputCaps: Partial<InputCaps> = {}) {
    this.#end = end;
    this.#maxChars = maxChars;
    this.#inputCaps = { bytes: Infinity, depth: MAX_INPUT_DEPTH, ...inputCaps };
    this.done = new Promise((resolve) => (this.#resolveDone = resolve));
    this.closed = new Promise((resolve) => end.onClose(() => resolve()));
    void this.closed.then(() => this.#finish(null));
    end.onMessage((data: unknown) => {
      // Whatever a message does, it must not throw out of here: that would end the host.
      try {
        this.#receive(data, handlers);
      } catch (err) {
        handlers.dropped(`a message that could not be handled (${describeError(err)})`);
      }
    });
  }

  /** Tells the agent to stop (fires its AbortSignal). */
  abort(reason: string): void {
    this.#post({ brand: BRAND, type: 'abort', reason });
  }

  /** Stops taking messages. Resolves when calls already taken have settled. */
  async settle(): Promise<void> {
    this.#finish(null);
    await this.#queue;
  }

  /** Closes the port: queued and late messages are dropped. */
  close(): void {
    this.#closed = true;
    this.#finish(null);
    this.#end.close();
  }

  #finish(msg: DoneMessage | null): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#resolveDone(msg);
  }

  #post(msg: HostMessage): void {
    this.#end.post(msg);
  }

  #receive(data: unknown, handlers: ChannelHandlers): void {
    if (this.#finished) return;
    // A flood of logs costs one string comparison each once the budget is spent.
    if (this.#skipLogs && typeof data === 'string' && data.startsWith(LOG_PREFIX)) return;
    const msg = this.#parse(data, handlers);
    if (!msg) return;
    switch (msg.type) {
      case 'call': {
        // Only the text's length is counted: the parsed input is at most a few times that.
        const chars = (data as string).length;
        if (this.#waitingChars + chars > CALLS_WAITING_MAX_CHARS) {
          delete msg.input;
          this.#post({ brand: BRAND, type: 'result', id: msg.id, result: handlers.busy(msg, this.#waitingChars) });
          return;
        }
        this.#take(chars, () => {
          let result: ToolResult | Promise<ToolResult>;
          try {
            result = handlers.call(msg);
          } catch (err) {
            result = callFault(err);
          }
          if (!(result instanceof Promise)) return this.#post({ brand: BRAND, type: 'result', id: msg.id, result });
          // A fault while handling a call must not become an unhandled rejection (which ends the
          // host); the agent still gets an answer, as a failed call.
          return result.then(
            (settled) => this.#post({ brand: BRAND, type: 'result', id: msg.id, result: settled }),
            (err: unknown) => this.#post({ brand: BRAND, type: 'result', id: msg.id, result: callFault(err) }),
          );
        });
        return;
      }
      case 'say': {
        const chars = (data as string).length;
        const answer = (result: UserReply): void => this.#post({ brand: BRAND, type: 'reply', id: msg.id, result });
        const say = handlers.say;
        if (!say) return answer({ ok: false, error: { code: 'invalid_input', message: 'this task has no user to talk to' } });
        if (this.#waitingChars + chars > CALLS_WAITING_MAX_CHARS) {
          return answer({ ok: false, error: { code: 'too_large', message: `refused unread: ${this.#waitingChars} characters of calls and messages are already waiting` } });
        }
        this.#take(chars, async () => {
          let result: UserReply;
          try {
            result = await say(msg);
          } catch (err) {
            result = { ok: false, error: { code: 'user_error', message: `silo could not handle this message: ${describeError(err)}` } };
          }
          answer(result);
        });
        return;
      }
      case 'log':
        try {
          if (handlers.log(msg) === false) this.#skipLogs = true;
        } catch (err) {
          // Like a call, a log that cannot be recorded (data too deep to serialise, say) must not
          // throw out of this listener: that would end the host.
          handlers.dropped(`a log message that could not be recorded (${err instanceof Error ? err.message : 'unknown error'})`);
        }
        return;
      case 'started':
        return handlers.started();
      case 'usage':
        return handlers.usage(msg);
      case 'exiting':
        return handlers.exiting(typeof msg.reason === 'string' ? msg.reason.slice(0, 1_000) : 'unknown');
      case 'done':
        return this.#finish(msg);
    }
  }

  /**
   * Runs `turn` (one call or message, `chars` of text) once those taken before it are answered:
   * at once when none is waiting, so that a tool that answers at once is answered in the same
   * turn of the event loop. Each turn ends when what it returns settles (it never rejects).
   */
  #take(chars: number, turn: () => void | Promise<void>): void {
    // Whatever a turn does, the queue goes on: a rejected queue would skip every later turn.
    const ended = (): void => {
      this.#unanswered--;
    };
    if (this.#unanswered === 0) {
      const running = turn();
      if (running === undefined) return;
      this.#unanswered++;
      this.#queue = running.then(ended, ended);
      return;
    }
    this.#unanswered++;
    this.#waitingChars += chars;
    this.#queue = this.#queue.then(() => {
      this.#waitingChars -= chars;
      return this.#closed ? undefined : turn();
    }).then(ended, ended);
  }

  #parse(data: unknown, handlers: ChannelHandlers): WorkerMessage | null {
    if (typeof data !== 'string') {
      handlers.dropped(`a ${typeof data} message (only JSON text is accepted)`);
      return null;
    }
    if (data.length > this.#maxChars) {
      handlers.dropped(`a message of ${data.length} characters (over the ${this.#maxChars} cap)`);
      return null;
    }
    let msg: unknown;
    /** A property name refused in a call's input: `__proto__`, or `constructor` holding an object. */
    let forbidden: '__proto__' | 'constructor' | undefined;
    try {
      // JSON.parse makes "__proto__" an own property, harmless until some tool copies the input
      // with Object.assign or a spread into a plain object; the reviver removes it, and the call
      // is refused below. A "constructor" key holding an object is the other way to a prototype
      // (a careless deep merge follows target.constructor.prototype): such a call is refused too.
      // A key can be spelled with \u escapes ("\u005f_proto__"), so text with any escape goes
      // through the reviver too.
      msg = data.includes('__proto__') || data.includes('constructor') || data.includes('\\u')
        ? JSON.parse(data, (key, value: unknown) => {
            if (key === 'constructor' && typeof value === 'object' && value !== null) forbidden ??= 'constructor';
            if (key !== '__proto__') return value;
            forbidden = '__proto__';
            return undefined;
          })
        : JSON.parse(data);
    } catch (err) {
      handlers.dropped(`a message that is not valid JSON (${(err as Error).message})`);
      return null;
    }
    if (!isMessage(msg)) {
      handlers.dropped('a message without the Silo brand or with an unknown type');
      return null;
    }
    // Every field the host keeps is bounded here, whatever the worker (or an agent writing on its
    // port) sent: text cut, values outside their set dropped.
    if (msg.type === 'log') {
      if (msg.stream !== undefined && msg.stream !== 'stdout' && msg.stream !== 'stderr') delete msg.stream;
      return msg;
    }
    if (msg.type === 'done') {
      if (msg.outputError !== undefined) msg.outputError = typeof msg.outputError === 'string' ? msg.outputError.slice(0, AGENT_NOTE_MAX_CHARS) : 'the output could not be sent';
      return msg;
    }
    if (msg.type === 'say') {
      // Either text, or the worker's reason for refusing it (a known code, a short message).
      if (typeof msg.text !== 'string') {
        delete msg.text;
        const refused = (typeof msg.refused === 'object' && msg.refused !== null ? msg.refused : {}) as Partial<NonNullable<SayMessage['refused']>>;
        msg.refused = {
          code: refused.code === 'too_large' ? 'too_large' : 'invalid_input',
          message: typeof refused.message === 'string' ? refused.message.slice(0, AGENT_NOTE_MAX_CHARS) : 'user.send takes a string',
        };
      } else delete msg.refused;
      return msg;
    }
    if (msg.type !== 'call') return msg;
    const sentName = msg.name;
    msg.name = capToolName(sentName);
    if (msg.inputError !== undefined) {
      // The worker's account of a bad input: a known kind, a short message, and no input beside it.
      const { kind, message } = (typeof msg.inputError === 'object' && msg.inputError !== null ? msg.inputError : {}) as Partial<NonNullable<CallMessage['inputError']>>;
      refuseInput(msg, {
        kind: kind !== undefined && INPUT_ERRORS.has(kind) ? kind : 'unserialisable',
        message: typeof message === 'string' ? message.slice(0, AGENT_NOTE_MAX_CHARS) : 'the input could not be sent',
      });
      if (typeof msg.inputBytes !== 'number' || !Number.isFinite(msg.inputBytes)) msg.inputBytes = 0;
    }
    if (forbidden !== undefined) {
      refuseInput(msg, {
        kind: 'forbidden_key',
        message:
          forbidden === '__proto__'
            ? '"__proto__" is not allowed as a property name'
            : '"constructor" is not allowed as the name of a property that holds an object',
      });
    } else if ('input' in msg) {
      // The worker measures inputs, but its text is the agent's to forge: the host measures the
      // text it received. The input is part of the message, so the message bounds it from above.
      const { bytes, depth } = this.#inputCaps;
      const size = data.length * 3 <= bytes ? 0 : Buffer.byteLength(data, 'utf8') - envelopeBytes(sentName);
      if (size > bytes) {
        refuseInput(msg, { kind: 'too_large', message: `input is about ${size} bytes` });
        msg.inputBytes = size;
      }
      // Too deep an input would overflow the stack of whatever walks it next (trace, diff, tool).
      // (JSON text nests at most half its length deep: a short message is not scanned.)
      else if (data.length > 2 * (depth + 1) && nestingDepth(data, depth + 1) > depth + 1) {
        refuseInput(msg, { kind: 'too_deep', message: `input nests deeper than ${depth} levels` });
      }
    }
    return msg;
  }
}

/** The answer to a call whose handling failed (a fault of Silo's, not of the tool). */
function callFault(err: unknown): ToolResult {
  return { ok: false, error: { code: 'tool_error', message: `silo could not handle this call: ${describeError(err)}` } };
}

/** The kinds of bad input a worker may report. */
const INPUT_ERRORS = new Set<string>(['unserialisable', 'too_large', 'too_deep', 'forbidden_key']);

/** A tool name as the host keeps it: cut at MAX_TOOL_NAME_CHARS, marked, so it names no tool. */
export function capToolName(name: string): string {
  return name.length <= MAX_TOOL_NAME_CHARS ? name : `${name.slice(0, MAX_TOOL_NAME_CHARS)}… (${name.length} characters)`;
}

/** Bounds on a call's input, as the host measures it. */
export interface InputCaps {
  /** UTF-8 bytes of the input's JSON text. */
  bytes: number;
  /** Levels of nested arrays and objects. */
  depth: number;
}

function refuseInput(msg: CallMessage, error: NonNullable<CallMessage['inputError']>): void {
  delete msg.input;
  msg.inputError = error;
}

/** Bytes of a call message that are not its input (an estimate that errs low), given the name it was sent with. */
function envelopeBytes(name: string): number {
  return Buffer.byteLength(name, 'utf8') + 96;
}

/**
 * The deepest nesting of arrays and objects in JSON text, brackets inside strings ignored; stops
 * counting once past `stopAt`. A single pass over the characters, without recursion.
 */
export function nestingDepth(text: string, stopAt: number): number {
  let depth = 0;
  let max = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x7b || c === 0x5b) {
      depth++;
      if (depth > max) max = depth;
      if (max > stopAt) return max;
    } else if (c === 0x7d || c === 0x5d) {
      depth--;
    }
  }
  return max;
}

/** How the worker's log messages begin (JSON.stringify keeps key order). */
const LOG_PREFIX = `{"brand":"${BRAND}","type":"log"`;

const TYPES = new Set(['call', 'say', 'log', 'started', 'usage', 'exiting', 'done']);

function isMessage(msg: unknown): msg is WorkerMessage {
  if (typeof msg !== 'object' || msg === null) return false;
  const m = msg as { brand?: unknown; type?: unknown; id?: unknown; name?: unknown; message?: unknown };
  if (m.brand !== BRAND || typeof m.type !== 'string' || !TYPES.has(m.type)) return false;
  if (m.type === 'call') return typeof m.id === 'number' && typeof m.name === 'string';
  if (m.type === 'say') return typeof m.id === 'number';
  if (m.type === 'log') return typeof m.message === 'string';
  return true;
}
