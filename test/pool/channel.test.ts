import { describe, it, expect, vi, afterEach } from 'vitest';
import type { MessagePort } from 'node:worker_threads';
import { PortLink } from '../../src/pool/ends.js';
import { HostChannel, nestingDepth, type CallMessage, type ChannelHandlers, type InputCaps } from '../../src/pool/channel.js';
import { BRAND, type HostMessage } from '../../src/protocol.js';
import type { ToolResult } from '../../src/types.js';
import { AGENT_NOTE_MAX_CHARS, CALLS_WAITING_MAX_CHARS, MAX_TOOL_NAME_CHARS } from '../../src/options.js';

const open: { channel: HostChannel; link: PortLink }[] = [];

afterEach(() => {
  for (const { channel, link } of open.splice(0)) {
    channel.close();
    link.workerPort.close();
  }
});

/** A channel whose handlers are spies; `call` answers with the call's input unless overridden. */
function setup(
  call: ChannelHandlers['call'] = (msg) => ({ ok: true, value: msg.input ?? null }),
  maxChars = 10_000,
  inputCaps: Partial<InputCaps> = {},
) {
  const handlers = {
    call: vi.fn(call),
    busy: vi.fn((_msg: CallMessage, _waitingChars: number): ToolResult => ({ ok: false, error: { code: 'limit_exceeded', message: 'busy' } })),
    log: vi.fn(),
    started: vi.fn(),
    usage: vi.fn(),
    exiting: vi.fn(),
    dropped: vi.fn(),
  };
  const link = new PortLink();
  const channel = new HostChannel(link.host, handlers, maxChars, inputCaps);
  open.push({ channel, link });
  const results: Extract<HostMessage, { type: 'result' }>[] = [];
  link.workerPort.on('message', (msg: HostMessage) => {
    if (msg.type === 'result') results.push(msg);
  });
  return { channel, handlers, results, port: link.workerPort };
}

/** Posts a message as the worker does: JSON text. */
const send = (port: MessagePort, msg: object): void => port.postMessage(JSON.stringify({ brand: BRAND, ...msg }));
const callMsg = (id: number, input: unknown = { n: id }) => ({ type: 'call', id, name: 'tool', input, inputBytes: 0 });
const doneMsg = { type: 'done', outcome: 'returned', output: 'ok', outputTruncated: false };

/** Lets queued port messages and promise callbacks run. */
const flush = async (rounds = 5): Promise<void> => {
  for (let i = 0; i < rounds; i++) await new Promise((resolve) => setImmediate(resolve));
};

function deferred() {
  let resolve!: (r: ToolResult) => void;
  const promise = new Promise<ToolResult>((r) => (resolve = r));
  return { promise, resolve };
}

describe('HostChannel', () => {
  it('handles calls one at a time, in the order they arrived, and answers each', async () => {
    const log: string[] = [];
    const { port, results } = setup(async (msg) => {
      log.push(`start ${msg.id}`);
      // Later calls finish sooner: only one-at-a-time handling keeps them in order.
      await new Promise((resolve) => setTimeout(resolve, 12 - 3 * msg.id));
      log.push(`end ${msg.id}`);
      return { ok: true, value: msg.id };
    });
    for (let id = 1; id <= 4; id++) send(port, callMsg(id));
    await vi.waitFor(() => expect(results).toHaveLength(4), { timeout: 20_000, interval: 5 });
    expect(log).toEqual(['start 1', 'end 1', 'start 2', 'end 2', 'start 3', 'end 3', 'start 4', 'end 4']);
    expect(results.map((r) => [r.id, r.result])).toEqual([1, 2, 3, 4].map((id) => [id, { ok: true, value: id }]));
    expect(results.every((r) => r.brand === BRAND)).toBe(true);
  });

  it('answers a call whose handler throws with a tool_error, and keeps going', async () => {
    let first = true;
    const { port, handlers, results } = setup((msg) => {
      if (first) {
        first = false;
        throw new Error('handler bug');
      }
      return { ok: true, value: msg.id };
    });
    send(port, callMsg(1));
    send(port, callMsg(2));
    await vi.waitFor(() => expect(results).toHaveLength(2), { timeout: 20_000, interval: 5 });
    expect(handlers.call).toHaveBeenCalledTimes(2);
    expect(results.map((r) => [r.id, r.result])).toEqual([
      [1, { ok: false, error: { code: 'tool_error', message: 'silo could not handle this call: handler bug' } }],
      [2, { ok: true, value: 2 }],
    ]);
  });

  it('passes logs and started on to their handlers', async () => {
    const { port, handlers } = setup();
    send(port, { type: 'started' });
    send(port, { type: 'log', message: 'thinking', data: { step: 1 } });
    await vi.waitFor(() => expect(handlers.log).toHaveBeenCalledTimes(1), { timeout: 20_000, interval: 5 });
    expect(handlers.started).toHaveBeenCalledTimes(1);
    expect(handlers.log).toHaveBeenCalledWith({ brand: BRAND, type: 'log', message: 'thinking', data: { step: 1 } });
  });

  describe('drops what breaks the protocol', () => {
    it('a message that is not a string', async () => {
      const { port, handlers } = setup();
      port.postMessage({ brand: BRAND, ...callMsg(1) });
      port.postMessage(new Uint8Array([1, 2]));
      await vi.waitFor(() => expect(handlers.dropped).toHaveBeenCalledTimes(2), { timeout: 20_000, interval: 5 });
      expect(handlers.dropped.mock.calls[0]![0]).toContain('a object message (only JSON text is accepted)');
      expect(handlers.call).not.toHaveBeenCalled();
    });

    it('a message over the size cap, unparsed', async () => {
      const { port, handlers } = setup(undefined, 200);
      send(port, callMsg(1, { text: 'x'.repeat(500) }));
      send(port, callMsg(2));
      await vi.waitFor(() => expect(handlers.call).toHaveBeenCalledTimes(1), { timeout: 20_000, interval: 5 });
      expect(handlers.dropped).toHaveBeenCalledTimes(1);
      expect(handlers.dropped.mock.calls[0]![0]).toMatch(/over the 200 cap/);
      expect(handlers.call.mock.calls[0]![0]).toMatchObject({ id: 2 });
    });

    it('text that is not valid JSON', async () => {
      const { port, handlers } = setup();
      port.postMessage('{"brand": "silo/1", "type": "call", ');
      await vi.waitFor(() => expect(handlers.dropped).toHaveBeenCalledTimes(1), { timeout: 20_000, interval: 5 });
      expect(handlers.dropped.mock.calls[0]![0]).toContain('not valid JSON');
      expect(handlers.call).not.toHaveBeenCalled();
    });

    it('a message without the brand, with an unknown type, or a call without id and name', async () => {
      const { port, handlers } = setup();
      port.postMessage(JSON.stringify(callMsg(1)));
      port.postMessage(JSON.stringify({ brand: 'other/1', ...callMsg(2) }));
      send(port, { type: 'exec', code: 'process.exit()' });
      send(port, { type: 'call', name: 'tool' });
      send(port, { type: 'call', id: 3 });
      port.postMessage('null');
      await vi.waitFor(() => expect(handlers.dropped).toHaveBeenCalledTimes(6), { timeout: 20_000, interval: 5 });
      expect(handlers.call).not.toHaveBeenCalled();
    });
  });

  describe('a call with a __proto__ key', () => {
    const proto = Object.getOwnPropertyNames(Object.prototype).sort();

    it('arrives with inputError forbidden_key and no input, and Object.prototype is untouched', async () => {
      const { port, handlers } = setup();
      port.postMessage(
        `{"brand":"silo/1","type":"call","id":1,"name":"tool","inputBytes":40,"input":{"user_id":"u1","__proto__":{"isAdmin":true}}}`,
      );
      await vi.waitFor(() => expect(handlers.call).toHaveBeenCalledTimes(1), { timeout: 20_000, interval: 5 });
      const msg = handlers.call.mock.calls[0]![0] as CallMessage;
      expect(msg).not.toHaveProperty('input');
      expect(msg.inputError).toEqual({ kind: 'forbidden_key', message: expect.stringContaining('__proto__') as string });
      expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
      expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(proto);
    });

    it('is caught when nested deep or spelled with JSON escapes', async () => {
      const { port, handlers } = setup();
      port.postMessage(`{"brand":"silo/1","type":"call","id":1,"name":"tool","inputBytes":0,"input":{"a":[{"b":{"__proto__":{"x":1}}}]}}`);
      port.postMessage(`{"brand":"silo/1","type":"call","id":2,"name":"tool","inputBytes":0,"input":{"\\u005f_proto__":{"isAdmin":true}}}`);
      port.postMessage(`{"brand":"silo/1","type":"call","id":3,"name":"tool","inputBytes":0,"input":{"__pr\\u006fto__":{"isAdmin":true}}}`);
      await vi.waitFor(() => expect(handlers.call).toHaveBeenCalledTimes(3), { timeout: 20_000, interval: 5 });
      for (const [msg] of handlers.call.mock.calls) {
        expect(msg).not.toHaveProperty('input');
        expect(msg.inputError?.kind).toBe('forbidden_key');
      }
      expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
    });

    it('leaves an ordinary key that mentions proto alone', async () => {
      const { port, handlers } = setup();
      send(port, callMsg(1, { note: 'the __proto__ trick', proto: 1 }));
      await vi.waitFor(() => expect(handlers.call).toHaveBeenCalledTimes(1), { timeout: 20_000, interval: 5 });
      expect(handlers.call.mock.calls[0]![0]).toMatchObject({ input: { note: 'the __proto__ trick', proto: 1 } });
    });
  });

  it('resolves done with the completion and never handles a call sent after it', async () => {
    const { channel, port, handlers } = setup();
    send(port, callMsg(1));
    send(port, doneMsg);
    send(port, callMsg(2));
    send(port, { type: 'log', message: 'late' });
    await expect(channel.done).resolves.toEqual({ brand: BRAND, ...doneMsg });
    await flush();
    expect(handlers.call).toHaveBeenCalledTimes(1);
    expect(handlers.call.mock.calls[0]![0]).toMatchObject({ id: 1 });
    expect(handlers.log).not.toHaveBeenCalled();
  });

  it('lets settle() wait for calls taken before the end', async () => {
    const slow = deferred();
    const { channel, port, handlers } = setup(() => slow.promise);
    send(port, callMsg(1));
    await vi.waitFor(() => expect(handlers.call).toHaveBeenCalledTimes(1), { timeout: 20_000, interval: 5 });
    let settled = false;
    const settling = channel.settle().then(() => (settled = true));
    await flush();
    expect(settled).toBe(false);
    slow.resolve({ ok: true, value: 1 });
    await settling;
    await expect(channel.done).resolves.toBeNull();
  });

  it('drops queued calls on close(): they never reach the handler', async () => {
    const slow = deferred();
    const { channel, port, handlers } = setup(() => slow.promise);
    send(port, callMsg(1));
    send(port, callMsg(2));
    send(port, callMsg(3));
    // Call 1 is running; calls 2 and 3 have arrived and wait their turn.
    await vi.waitFor(() => expect(handlers.call).toHaveBeenCalledTimes(1), { timeout: 20_000, interval: 5 });
    await flush();
    channel.close();
    slow.resolve({ ok: true, value: 1 });
    await flush();
    send(port, callMsg(4));
    await flush();
    expect(handlers.call).toHaveBeenCalledTimes(1);
    await expect(channel.done).resolves.toBeNull();
  });

  it('resolves done with null and closed when the port closes without a completion', async () => {
    const { channel, port } = setup();
    port.close();
    await channel.closed;
    await expect(channel.done).resolves.toBeNull();
  });

  it('sends abort to the worker', async () => {
    const { channel, port } = setup();
    const got = new Promise<HostMessage>((resolve) => port.once('message', resolve));
    channel.abort('timeout');
    await expect(got).resolves.toEqual({ brand: BRAND, type: 'abort', reason: 'timeout' });
  });

  it('measures a call input itself and refuses one over the byte cap, whatever the worker claims', async () => {
    const { port, handlers } = setup(undefined, 100_000, { bytes: 1_000 });
    send(port, { ...callMsg(1, { text: 'x'.repeat(5_000) }), inputBytes: 10 });
    send(port, callMsg(2, { text: 'short' }));
    await vi.waitFor(() => expect(handlers.call).toHaveBeenCalledTimes(2), { timeout: 20_000, interval: 5 });
    const [big, small] = handlers.call.mock.calls.map(([msg]) => msg);
    expect(big).not.toHaveProperty('input');
    expect(big?.inputError).toMatchObject({ kind: 'too_large' });
    expect(small?.input).toEqual({ text: 'short' });
    expect(small?.inputError).toBeUndefined();
  });

  it('refuses an input nested deeper than the depth cap, so nothing walks it recursively', async () => {
    const { port, handlers } = setup(undefined, 1_000_000, { depth: 10 });
    const deep = JSON.parse('['.repeat(11) + ']'.repeat(11)) as unknown;
    const ok = JSON.parse('['.repeat(10) + ']'.repeat(10)) as unknown;
    send(port, callMsg(1, { deep }));
    send(port, callMsg(2, ok));
    send(port, callMsg(3, { text: '[[[[[[[[[[[[[[[[[[[[[[' }));
    await vi.waitFor(() => expect(handlers.call).toHaveBeenCalledTimes(3), { timeout: 20_000, interval: 5 });
    const [first, second, third] = handlers.call.mock.calls.map(([msg]) => msg);
    expect(first?.inputError).toMatchObject({ kind: 'too_deep' });
    expect(first).not.toHaveProperty('input');
    expect(second?.inputError).toBeUndefined();
    expect(third?.inputError).toBeUndefined();
  });

  describe('caps every field an agent sends where it is parsed', () => {
    it('cuts a tool name over MAX_TOOL_NAME_CHARS (so it names no tool), keeping its length', async () => {
      const { port, handlers } = setup(undefined, 10_000_000);
      send(port, { ...callMsg(1), name: 'n'.repeat(1_000_000) });
      send(port, { ...callMsg(2), name: 'x'.repeat(MAX_TOOL_NAME_CHARS) });
      await vi.waitFor(() => expect(handlers.call).toHaveBeenCalledTimes(2), { timeout: 2_000, interval: 5 });
      const [long, exact] = handlers.call.mock.calls.map(([msg]) => msg);
      expect(long?.name).toBe(`${'n'.repeat(MAX_TOOL_NAME_CHARS)}… (1000000 characters)`);
      expect(long?.input).toEqual({ n: 1 });
      expect(exact?.name).toBe('x'.repeat(MAX_TOOL_NAME_CHARS));
    });

    it("keeps a worker's account of a bad input short and of a known kind, and never an input beside it", async () => {
      const { port, handlers } = setup(undefined, 10_000_000);
      send(port, { ...callMsg(1), inputError: { kind: 'too_deep', message: 'm'.repeat(100_000) } });
      send(port, { ...callMsg(2), inputError: { kind: 'x'.repeat(10_000), message: { toString: 1 } }, inputBytes: 'lots' });
      await vi.waitFor(() => expect(handlers.call).toHaveBeenCalledTimes(2), { timeout: 2_000, interval: 5 });
      const [first, second] = handlers.call.mock.calls.map(([msg]) => msg);
      expect(first).not.toHaveProperty('input');
      expect(first?.inputError).toEqual({ kind: 'too_deep', message: 'm'.repeat(AGENT_NOTE_MAX_CHARS) });
      expect(second?.inputError).toEqual({ kind: 'unserialisable', message: 'the input could not be sent' });
      expect(second?.inputBytes).toBe(0);
    });

    it("drops a log's stream unless it is stdout or stderr, and cuts a completion's outputError", async () => {
      const { port, handlers, channel } = setup(undefined, 10_000_000);
      send(port, { type: 'log', message: 'a', stream: 's'.repeat(100_000) });
      send(port, { type: 'log', message: 'b', stream: 'stderr' });
      send(port, { ...doneMsg, outputError: 'e'.repeat(100_000) });
      const done = await channel.done;
      const logs = handlers.log.mock.calls.map(([msg]) => msg as { message: string; stream?: string });
      expect(logs).toEqual([{ brand: BRAND, type: 'log', message: 'a' }, { brand: BRAND, type: 'log', message: 'b', stream: 'stderr' }]);
      expect(done?.outputError).toBe('e'.repeat(AGENT_NOTE_MAX_CHARS));
    });

    it('answers at once, unrun, a call that comes while more than CALLS_WAITING_MAX_CHARS of calls wait', async () => {
      const gate = deferred();
      const { port, handlers, results } = setup((msg) => (msg.id === 1 ? gate.promise : { ok: true, value: msg.id }), 10_000_000);
      const big = 'b'.repeat(Math.ceil(CALLS_WAITING_MAX_CHARS / 3));
      // The first waits on the gate; the next two fit beside it; the fourth does not.
      for (let id = 1; id <= 4; id++) send(port, callMsg(id, { big }));
      await vi.waitFor(() => expect(handlers.busy).toHaveBeenCalledTimes(1), { timeout: 2_000, interval: 5 });
      expect(handlers.busy.mock.calls[0]?.[0]).toMatchObject({ id: 4 });
      expect(handlers.busy.mock.calls[0]?.[0]).not.toHaveProperty('input');
      expect(results.map((r) => r.id)).toEqual([4]);
      gate.resolve({ ok: true, value: 1 });
      await vi.waitFor(() => expect(results).toHaveLength(4), { timeout: 2_000, interval: 5 });
      expect(handlers.call).toHaveBeenCalledTimes(3);
      // Once they have run, there is room again.
      send(port, callMsg(5, { big }));
      await vi.waitFor(() => expect(handlers.call).toHaveBeenCalledTimes(4), { timeout: 2_000, interval: 5 });
    });
  });
});

describe('HostChannel answering at once', () => {
  /** A channel on an end that delivers synchronously: what it posts is seen as it posts it. */
  function direct(call: ChannelHandlers['call'], fails: (msg: HostMessage) => boolean = () => false) {
    let deliver!: (data: unknown) => void;
    const posted: HostMessage[] = [];
    const end = {
      post: (msg: HostMessage) => {
        if (fails(msg)) throw new Error('cannot send');
        posted.push(msg);
      },
      onMessage: (listener: (data: unknown) => void) => void (deliver = listener),
      onClose: () => {},
      close: () => {},
    };
    const handlers = { call: vi.fn(call), busy: vi.fn(), log: vi.fn(), started: vi.fn(), usage: vi.fn(), exiting: vi.fn(), dropped: vi.fn() };
    const channel = new HostChannel(end, handlers as unknown as ChannelHandlers, 10_000);
    const receive = (msg: object): void => deliver(JSON.stringify({ brand: BRAND, ...msg }));
    const answers = (): [number, ToolResult][] => posted.flatMap((m) => (m.type === 'result' ? [[m.id, m.result] as [number, ToolResult]] : []));
    return { channel, handlers, receive, answers };
  }

  it('answers a call whose handler answers at once before the message handler returns', () => {
    const { receive, answers } = direct((msg) => ({ ok: true, value: msg.id }));
    receive(callMsg(1));
    expect(answers()).toEqual([[1, { ok: true, value: 1 }]]);
    receive(callMsg(2));
    expect(answers()).toEqual([[1, { ok: true, value: 1 }], [2, { ok: true, value: 2 }]]);
  });

  it('keeps a call that could answer at once waiting behind one still running, in arrival order', async () => {
    const slow = deferred();
    const { channel, handlers, receive, answers } = direct((msg) => (msg.id === 1 ? slow.promise : { ok: true, value: msg.id }));
    receive(callMsg(1));
    receive(callMsg(2));
    receive(callMsg(3));
    await flush();
    // Calls 2 and 3 have not run: call 1 has not been answered.
    expect(handlers.call).toHaveBeenCalledTimes(1);
    expect(answers()).toEqual([]);
    slow.resolve({ ok: true, value: 'one' });
    await channel.settle();
    expect(answers()).toEqual([[1, { ok: true, value: 'one' }], [2, { ok: true, value: 2 }], [3, { ok: true, value: 3 }]]);
  });

  it('goes back to answering at once once the calls that waited are answered', async () => {
    const slow = deferred();
    const { handlers, receive, answers } = direct((msg) => (msg.id === 1 ? slow.promise : { ok: true, value: msg.id }));
    receive(callMsg(1));
    receive(callMsg(2));
    slow.resolve({ ok: true, value: 1 });
    await vi.waitFor(() => expect(answers()).toHaveLength(2), { timeout: 20_000, interval: 5 });
    await flush();
    receive(callMsg(3));
    expect(handlers.call).toHaveBeenCalledTimes(3);
    expect(answers().map(([id]) => id)).toEqual([1, 2, 3]);
  });

  it('goes on to the calls waiting behind one whose answer could not be sent', async () => {
    const slow = deferred();
    // The end fails to send the first answer (a sandbox gone, say).
    const { channel, handlers, receive, answers } = direct((msg) => (msg.id === 1 ? slow.promise : { ok: true, value: msg.id }), (msg) => msg.type === 'result' && msg.id === 1);
    receive(callMsg(1));
    receive(callMsg(2));
    slow.resolve({ ok: true, value: 1 });
    await vi.waitFor(() => expect(handlers.call).toHaveBeenCalledTimes(2), { timeout: 20_000, interval: 5 });
    await channel.settle();
    expect(answers()).toEqual([[2, { ok: true, value: 2 }]]);
  });

  it('answers with a tool_error a handler that throws at once or whose promise rejects, and keeps going', async () => {
    const { channel, receive, answers } = direct((msg) => {
      if (msg.id === 1) throw new Error('sync bug');
      if (msg.id === 2) return Promise.reject(new Error('async bug'));
      return { ok: true, value: msg.id };
    });
    receive(callMsg(1));
    receive(callMsg(2));
    receive(callMsg(3));
    await channel.settle();
    expect(answers()).toEqual([
      [1, { ok: false, error: { code: 'tool_error', message: 'silo could not handle this call: sync bug' } }],
      [2, { ok: false, error: { code: 'tool_error', message: 'silo could not handle this call: async bug' } }],
      [3, { ok: true, value: 3 }],
    ]);
  });
});

describe('nestingDepth', () => {
  it('counts arrays and objects, ignores brackets in strings and escaped quotes', () => {
    expect(nestingDepth('1', 99)).toBe(0);
    expect(nestingDepth('{"a":[{"b":[]}]}', 99)).toBe(4);
    expect(nestingDepth(String.raw`{"a":"[[[[\\"}`, 99)).toBe(1);
    expect(nestingDepth(String.raw`{"a":"\"[[[","b":[]}`, 99)).toBe(2);
  });

  it('stops counting once past the limit', () => {
    expect(nestingDepth('['.repeat(100_000), 5)).toBe(6);
  });
});
