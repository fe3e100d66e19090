/**
 * The host side of a conversation (src/user/conversation.ts): the opening line, replies, stop
 * tokens, maxTurns, refusals as values, a user that fails, and user_message events.
 */
import { describe, expect, it } from 'vitest';
import { Conversation, STOP_TOKENS, UserError, type Speaker } from '../../src/user/conversation.js';
import { Trace } from '../../src/rollout/trace.js';
import { eventsOf } from '../helpers.js';
import type { Message } from '../../src/types.js';

const script = (fn: (c: readonly Message[], turn: number) => string | Promise<string>): Speaker => ({ next: async (c, turn) => fn(c, turn) });

describe('Conversation', () => {
  it('asks for the opening line with an empty conversation, then for each reply with the dialogue so far', async () => {
    const seen: Message[][] = [];
    const trace = new Trace(null);
    const c = new Conversation(script((conv) => (seen.push([...conv]), conv.length === 0 ? 'I need help' : `reply ${conv.length}`)), trace);
    expect(await c.open()).toBe('I need help');
    expect(await c.say('What with?')).toEqual({ ok: true, reply: 'reply 2', ended: false });
    expect(seen).toEqual([[], [{ role: 'user', text: 'I need help' }, { role: 'agent', text: 'What with?' }]]);
    expect(c.messages.map((m) => m.role)).toEqual(['user', 'agent', 'user']);
    expect(eventsOf(trace.events, 'user_message').map((e) => [e.from, e.text])).toEqual([
      ['user', 'I need help'],
      ['agent', 'What with?'],
      ['user', 'reply 2'],
    ]);
  });

  it.each(STOP_TOKENS)('ends when the user says %s; later messages get conversation_ended and never reach the user', async (token) => {
    let calls = 0;
    const trace = new Trace(null);
    const c = new Conversation(script((conv) => (calls++, conv.length === 0 ? 'hi' : `Thanks. ${token}`)), trace);
    await c.open();
    expect(await c.say('done')).toEqual({ ok: true, reply: `Thanks. ${token}`, ended: true });
    expect(await c.say('anything else?')).toMatchObject({ ok: false, error: { code: 'conversation_ended' } });
    expect(calls).toBe(2);
    expect(c.endedBy).toBe('user');
    expect(eventsOf(trace.events, 'user_message').at(-1)).toMatchObject({ from: 'user', ended: 'user' });
  });

  it('ends at maxTurns: the last reply allowed says ended', async () => {
    const c = new Conversation(script(() => 'go on'), new Trace(null), { maxTurns: 2 });
    await c.open();
    expect(await c.say('a')).toMatchObject({ ok: true, ended: false });
    expect(await c.say('b')).toMatchObject({ ok: true, ended: true });
    expect(await c.say('c')).toMatchObject({ ok: false, error: { code: 'conversation_ended', message: expect.stringMatching(/maxTurns/) } });
    expect(c.endedBy).toBe('max_turns');
    expect(c.replies).toBe(2);
  });

  it('refuses an empty message and one over the byte cap without asking the user (the host checks what the worker may have forged)', async () => {
    let calls = 0;
    const trace = new Trace(null);
    const c = new Conversation(script(() => (calls++, 'hi')), trace, { maxBytes: 100 });
    await c.open();
    expect(await c.say('   ')).toMatchObject({ ok: false, error: { code: 'invalid_input' } });
    expect(await c.say('é'.repeat(51))).toMatchObject({ ok: false, error: { code: 'too_large' } });
    expect(calls).toBe(1);
    expect(eventsOf(trace.events, 'user_message')).toHaveLength(1);
  });

  it('cuts a user message over the byte cap', async () => {
    const c = new Conversation(script(() => 'y'.repeat(500)), new Trace(null), { maxBytes: 100 });
    expect(await c.open()).toBe('y'.repeat(100));
    expect(c.messages[0]!.text).toHaveLength(100);
    expect(await c.say('hi')).toMatchObject({ reply: 'y'.repeat(100) });
  });

  it('a user that throws is a user_error: recorded once, reported once, every later message refused', async () => {
    const trace = new Trace(null);
    const errors: string[] = [];
    const c = new Conversation(script((conv) => { if (conv.length > 0) throw new Error('script broke'); return 'hi'; }), trace);
    c.onError((m) => errors.push(m));
    await c.open();
    expect(await c.say('hello')).toMatchObject({ ok: false, error: { code: 'user_error', message: expect.stringMatching(/script broke/) } });
    expect(await c.say('hello?')).toMatchObject({ ok: false, error: { code: 'user_error' } });
    expect(errors).toEqual(['script broke']);
    expect(eventsOf(trace.events, 'user_error')).toHaveLength(1);
  });

  it('a user that cannot open the conversation throws UserError; a non-string message is a failure too', async () => {
    await expect(new Conversation(script(() => { throw new Error('no'); }), new Trace(null)).open()).rejects.toBeInstanceOf(UserError);
    await expect(new Conversation(script(() => 42 as unknown as string), new Trace(null)).open()).rejects.toThrow(/must be a string/);
  });

  it('a user that does not answer in time is a user_error', async () => {
    const c = new Conversation({ next: (conv) => (conv.length === 0 ? Promise.resolve('hi') : new Promise(() => {})) }, new Trace(null), { replyTimeoutMs: 50 });
    await c.open();
    expect(await c.say('hello')).toMatchObject({ ok: false, error: { code: 'user_error', message: expect.stringMatching(/no reply within 50 ms/) } });
  });

  it('close() abandons a reply being made, without calling it the user’s failure', async () => {
    const c = new Conversation({ next: (conv, _t, signal) => (conv.length === 0 ? Promise.resolve('hi') : new Promise((_, reject) => signal.addEventListener('abort', () => reject(new Error('aborted'))))) }, new Trace(null));
    await c.open();
    const pending = c.say('hello');
    c.close();
    expect(await pending).toMatchObject({ ok: false, error: { code: 'aborted' } });
    expect(c.error).toBeNull();
  });
});

describe('Conversation, closed', () => {
  it('close() does not wait for a script that never answers', async () => {
    const c = new Conversation({ next: () => new Promise(() => {}) }, new Trace(null));
    const opening = c.open();
    c.close();
    await expect(opening).rejects.toThrow(/the rollout ended before the user spoke/);
    expect(c.error).toBeNull();
  });
});
