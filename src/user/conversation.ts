/**
 * The host side of a conversation with a simulated user: it asks the user (scripted or LLM, see
 * speaker.ts) for its opening line and for a reply to each message the agent sends, keeps the
 * dialogue, records each message as a `user_message` trace event, ends the conversation on a stop
 * token or at maxTurns, and turns a user that fails into `user_error`. Nothing the agent sends
 * makes it throw: every refusal is a value.
 */
import { performance } from 'node:perf_hooks';
import { DEFAULT_USER_MAX_TURNS, USER_MESSAGE_MAX_BYTES, USER_REPLY_TIMEOUT_MS } from '../options.js';
import type { Trace } from '../rollout/trace.js';
import { capText } from '../rollout/output.js';
import { describeError } from '../errors.js';
import { TIMED_OUT, within } from '../time.js';
import type { Message, UserReply } from '../types.js';

/** Tokens that end a conversation when a user's message contains one (tau-bench's and tau2's). */
export const STOP_TOKENS = ['###STOP###', '###TRANSFER###', '###OUT-OF-SCOPE###'] as const;

/** Whatever produces the user's messages: a script, or a model. */
export interface Speaker {
  /** The user's next message given the conversation so far (empty: the opening line). May throw. */
  next(conversation: readonly Message[], turn: number, signal: AbortSignal): Promise<string>;
}

/** Options of a conversation. */
export interface ConversationOptions {
  /** Replies the user gives to the agent's messages; default DEFAULT_USER_MAX_TURNS. */
  maxTurns?: number;
  /** UTF-8 bytes of one message; default USER_MESSAGE_MAX_BYTES. */
  maxBytes?: number;
  /** How long one reply may take, ms; default USER_REPLY_TIMEOUT_MS. */
  replyTimeoutMs?: number;
}

/** Raised by open() when the user cannot give its opening line. */
export class UserError extends Error {
  readonly code = 'user_error';
}

/** How the conversation ended, when it did. */
export type EndedBy = 'user' | 'max_turns';

export class Conversation {
  /** The dialogue so far, opening line first. */
  readonly messages: Message[] = [];
  /** Replies the user gave to the agent's messages. */
  replies = 0;
  endedBy: EndedBy | null = null;
  /** Why the user failed, once it did: the run is an error (`user_error`). */
  error: string | null = null;
  /** Time spent waiting for the user's replies to the agent (the opening line not counted), ms. */
  replyMs = 0;

  readonly #speaker: Speaker;
  readonly #trace: Trace;
  readonly #maxTurns: number;
  readonly #maxBytes: number;
  readonly #replyTimeoutMs: number;
  #onError: ((message: string) => void) | undefined;
  readonly #stop = new AbortController();
  /** Rejects when close() is called: a user that ignores the signal (a script) is not waited for. */
  readonly #stopped = new Promise<never>((_, reject) => this.#stop.signal.addEventListener('abort', () => reject(new Error('closed')), { once: true }));

  constructor(speaker: Speaker, trace: Trace, options: ConversationOptions = {}) {
    this.#speaker = speaker;
    this.#trace = trace;
    this.#maxTurns = options.maxTurns ?? DEFAULT_USER_MAX_TURNS;
    this.#maxBytes = options.maxBytes ?? USER_MESSAGE_MAX_BYTES;
    this.#replyTimeoutMs = options.replyTimeoutMs ?? USER_REPLY_TIMEOUT_MS;
    this.#stopped.catch(() => {});
  }

  /** Called once when the user fails (the run becomes an error: whoever drives the agent stops it). */
  onError(listener: (message: string) => void): void {
    this.#onError = listener;
  }

  get ended(): boolean {
    return this.endedBy !== null;
  }

  /** The user's opening line (recorded): the agent's instruction. Throws UserError when the user fails. */
  async open(): Promise<string> {
    const text = await this.#ask();
    if (text === null) throw new UserError(this.error ?? 'the rollout ended before the user spoke');
    return this.#userSaid(text, false);
  }

  /** A message from the agent (`user.send`): the user's reply, or why there is none. */
  async say(text: string): Promise<UserReply> {
    if (this.error !== null) return fail('user_error', `the simulated user failed earlier: ${this.error}`);
    if (this.#stop.signal.aborted) return fail('aborted', 'the rollout is ending');
    if (this.endedBy !== null) {
      return fail('conversation_ended', this.endedBy === 'user' ? 'the user ended the conversation' : `the user gave the ${this.#maxTurns} replies allowed (maxTurns)`);
    }
    if (text.trim() === '') return fail('invalid_input', 'the message is empty; send some text');
    // The worker checks the size too, but what it sends is the agent's to forge.
    if (Buffer.byteLength(text, 'utf8') > this.#maxBytes) return fail('too_large', `the message is over the ${this.#maxBytes}-byte cap of one message to the user; send a shorter one`);
    this.messages.push(Object.freeze({ role: 'agent' as const, text }));
    this.#trace.add({ type: 'user_message', from: 'agent', text });
    const asked = performance.now();
    const reply = await this.#ask();
    this.replyMs += performance.now() - asked;
    if (reply === null) return this.error === null ? fail('aborted', 'the rollout is ending') : fail('user_error', `the simulated user failed: ${this.error}`);
    this.replies++;
    // The agent gets the reply as it is recorded (cut at the cap).
    const said = this.#userSaid(reply, this.replies >= this.#maxTurns);
    return { ok: true, reply: said, ended: this.endedBy !== null };
  }

  /** Stops the conversation: a reply being made is abandoned, later messages are refused. */
  close(): void {
    this.#stop.abort(new Error('the rollout ended'));
  }

  /** Records a message of the user's (and returns it as recorded); `last`: it is the last reply maxTurns allows. */
  #userSaid(raw: string, last: boolean): string {
    const text = capText(raw, this.#maxBytes).output ?? '';
    if (STOP_TOKENS.some((token) => text.includes(token))) this.endedBy = 'user';
    else if (last) this.endedBy = 'max_turns';
    this.messages.push(Object.freeze({ role: 'user' as const, text }));
    this.#trace.add({ type: 'user_message', from: 'user', text, ...(this.endedBy === null ? {} : { ended: this.endedBy }) });
    return text;
  }

  /** The speaker's next message, or null (and `error` set) when it failed. */
  async #ask(): Promise<string | null> {
    let text: unknown;
    try {
      const answer = await within(
        // Messages are frozen as they are added: a shallow copy keeps the user from changing ours.
        Promise.race([this.#speaker.next(this.messages.slice(), this.replies, this.#stop.signal), this.#stopped]),
        this.#replyTimeoutMs,
      );
      if (answer === TIMED_OUT) throw new Error(`no reply within ${this.#replyTimeoutMs} ms`);
      text = answer;
    } catch (err) {
      // Abandoned by close(): the rollout is ending for another reason, not the user's failure.
      if (this.#stop.signal.aborted) return null;
      return this.#failed(describeError(err));
    }
    if (typeof text !== 'string') return this.#failed(`the user's message must be a string (got ${text === null ? 'null' : typeof text})`);
    if (text.trim() === '') return this.#failed("the user's message is empty");
    return text;
  }

  #failed(message: string): null {
    if (this.error !== null) return null;
    this.error = message.slice(0, 2_000);
    this.#trace.add({ type: 'user_error', message: this.error });
    this.#onError?.(this.error);
    return null;
  }
}

function fail(code: Extract<UserReply, { ok: false }>['error']['code'], message: string): UserReply {
  return { ok: false, error: { code, message } };
}
