/** The sealed link between host and sandbox (src/sandbox/link.ts), on a fake socket. */
import { describe, expect, it } from 'vitest';
import type { Socket } from 'node:net';
import { FrameReader, FrameWriter, newKey, TO_HOST, TO_SANDBOX, type Incoming } from '../../src/sandbox/link.js';

/** A writer whose frames land in `wire`, and a reader of that wire. */
function pair(allows: (length: number) => boolean = () => true) {
  const key = newKey();
  const wire: Buffer[] = [];
  const socket = { destroyed: false, cork: () => {}, uncork: () => {}, write: (b: Buffer) => wire.push(Buffer.from(b)) } as unknown as Socket;
  const writer = new FrameWriter(socket, key, TO_HOST);
  const got: Incoming[] = [];
  const broken: string[] = [];
  const reader = new FrameReader(key, TO_HOST, allows, (f) => got.push(f), (r) => broken.push(r));
  const bytes = (): Buffer => Buffer.concat(wire.splice(0));
  return { key, writer, reader, got, broken, bytes };
}

describe('the sealed link', () => {
  it('carries text, messages to workers and other messages whole, however the bytes are cut', () => {
    const { writer, reader, got, broken, bytes } = pair();
    const when = new Date('2026-01-02T03:04:05Z');
    writer.text(7, '{"brand":"silo/1","type":"call","name":"café ☕"}');
    writer.toWorker(8, { type: 'result', result: { ok: true, value: { when, big: 12n, map: new Map([['a', 1]]) } } });
    writer.message({ t: 'exit', id: 7, exit: { kind: 'exited', message: 'done' } });
    writer.text(9, 'x'.repeat(200_000));
    const wire = bytes();
    // One byte at a time: headers and bodies split everywhere.
    for (let i = 0; i < wire.length; i++) reader.push(wire.subarray(i, i + 1));
    expect(broken).toEqual([]);
    expect(got[0]).toEqual({ kind: 'text', id: 7, text: '{"brand":"silo/1","type":"call","name":"café ☕"}' });
    expect(got[1]).toEqual({ kind: 'to', id: 8, message: { type: 'result', result: { ok: true, value: { when, big: 12n, map: new Map([['a', 1]]) } } } });
    expect(got[2]).toEqual({ kind: 'message', message: { t: 'exit', id: 7, exit: { kind: 'exited', message: 'done' } } });
    expect(got[3]).toMatchObject({ kind: 'text', id: 9 });
    expect((got[3] as { text: string }).text).toHaveLength(200_000);
  });

  it('writes the frames of one turn of the event loop in one write, at its end', async () => {
    const calls: string[] = [];
    const socket = {
      destroyed: false,
      cork: () => calls.push('cork'),
      uncork: () => calls.push('uncork'),
      write: () => calls.push('write'),
    } as unknown as Socket;
    const writer = new FrameWriter(socket, newKey(), TO_HOST);
    writer.text(1, 'a');
    writer.message({ t: 'ping' });
    writer.toWorker(2, { x: 1 });
    expect(calls).toEqual(['cork', 'write', 'write', 'write']);
    await new Promise((resolve) => setImmediate(resolve));
    writer.text(1, 'b');
    expect(calls).toEqual(['cork', 'write', 'write', 'write', 'uncork', 'cork', 'write']);
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls.at(-1)).toBe('uncork');
    // flush() writes what is held at once (the sandbox does before it exits on a broken link), once.
    writer.text(1, 'c');
    writer.flush();
    expect(calls.slice(-3)).toEqual(['cork', 'write', 'uncork']);
    await new Promise((resolve) => setImmediate(resolve));
    expect(calls.slice(-3)).toEqual(['cork', 'write', 'uncork']);
    writer.flush();
    expect(calls.slice(-3)).toEqual(['cork', 'write', 'uncork']);
  });

  it('sends ciphertext: the text is not on the wire', () => {
    const { writer, bytes } = pair();
    writer.text(1, 'neighbour-secret-4711');
    writer.message({ secret: 'neighbour-secret-4711' });
    expect(bytes().includes('neighbour-secret')).toBe(false);
  });

  it('breaks, once, on a frame written without the key (in the old IPC format or any other)', () => {
    const { writer, reader, got, broken, bytes } = pair();
    writer.text(1, 'honest');
    reader.push(bytes());
    // A frame of the right shape under another key.
    const other = pair();
    other.writer.text(2, '{"type":"done","output":"forged"}');
    reader.push(other.bytes());
    writer.text(1, 'after');
    reader.push(bytes());
    expect(got.map((f) => (f as { text: string }).text)).toEqual(['honest']);
    expect(broken).toHaveLength(1);
    expect(broken[0]).toMatch(/does not open under the key/);
  });

  it('breaks when a frame is missing (one taken off the socket), and on a flipped bit', () => {
    const a = pair();
    a.writer.text(1, 'one');
    a.bytes(); // taken by someone else
    a.writer.text(1, 'two');
    a.reader.push(a.bytes());
    expect(a.got).toEqual([]);
    expect(a.broken).toHaveLength(1);

    const b = pair();
    b.writer.text(1, 'one');
    const wire = b.bytes();
    wire[wire.length - 20]! ^= 1;
    b.reader.push(wire);
    expect(b.got).toEqual([]);
    expect(b.broken).toHaveLength(1);
  });

  it('breaks on a length it does not allow, before reading the body', () => {
    const { writer, reader, got, broken, bytes } = pair((length) => length < 1_000);
    writer.text(1, 'x'.repeat(5_000));
    reader.push(bytes().subarray(0, 4));
    expect(got).toEqual([]);
    expect(broken[0]).toMatch(/a frame of \d+ bytes/);
  });

  it('carries frames whatever the chunks: headers split from their bodies, several frames in one chunk', () => {
    const { writer, reader, got, broken, bytes } = pair();
    // Lengths that are and are not whole cipher blocks: the key stream runs on across frames.
    const texts = Array.from({ length: 40 }, (_, i) => `${i}:${'é'.repeat((i * 37) % 300)}`);
    for (const [i, text] of texts.entries()) writer.text(i, text);
    const wire = bytes();
    // Cut at varied places (a fixed pattern, so the test is the same every time).
    let at = 0;
    for (let i = 0; at < wire.length; i++) {
      const size = [1, 3, 4, 5, 17, 64, 700, 2][i % 8]!;
      reader.push(wire.subarray(at, at + size));
      at += size;
    }
    expect(broken).toEqual([]);
    expect(got).toEqual(texts.map((text, id) => ({ kind: 'text', id, text })));
  });

  it('breaks on a frame sent twice, on a changed length and on a changed tag', () => {
    const replay = pair();
    replay.writer.text(1, 'once');
    const frame = replay.bytes();
    replay.reader.push(frame);
    replay.reader.push(frame);
    expect(replay.got).toHaveLength(1);
    expect(replay.broken).toHaveLength(1);

    // One byte fewer in the length (the tag covers the length, and is no longer where it was).
    const length = pair();
    length.writer.text(1, 'length');
    const cut = length.bytes();
    cut.writeUInt32BE(cut.readUInt32BE(0) - 1, 0);
    length.reader.push(cut.subarray(0, cut.length - 1));
    expect(length.got).toEqual([]);
    expect(length.broken).toHaveLength(1);

    const tag = pair();
    tag.writer.text(1, 'tag');
    const wire = tag.bytes();
    wire[wire.length - 1]! ^= 0x80;
    tag.reader.push(wire);
    expect(tag.got).toEqual([]);
    expect(tag.broken).toHaveLength(1);
  });

  it('hands out typed arrays backed by their own frame only, never by memory shared with other frames', () => {
    const { writer, reader, got, broken, bytes } = pair();
    writer.text(1, '{"result":"neighbour-secret-4711"}');
    writer.toWorker(2, { type: 'result', result: { ok: true, value: { b: new Uint8Array([1, 2, 3]) } } });
    reader.push(bytes());
    expect(broken).toEqual([]);
    const view = (got[1] as { message: { result: { value: { b: Uint8Array } } } }).message.result.value.b;
    expect([...view]).toEqual([1, 2, 3]);
    // Posted to a worker, a view takes its whole backing memory along: it must be this frame's.
    expect(view.buffer.byteLength).toBeLessThan(100);
    expect(Buffer.from(view.buffer).includes('neighbour-secret')).toBe(false);
  });

  it("hands out a view at any offset in the message with its own bytes, never a slice of the reader's shared pool", () => {
    const { writer, reader, got, broken, bytes } = pair();
    // A Float64Array the message holds at an offset that is not a multiple of 8: V8's deserializer
    // copies it into a slice of Node's shared pool, which would go to the worker whole (in the
    // sandbox: other rollouts' calls, written to the host through the pool).
    for (let pad = 0; pad < 8; pad++) writer.toWorker(pad, { type: 'result', result: { ok: true, value: { pad: 'x'.repeat(pad), f: new Float64Array([1.5, 2.5]), d: new DataView(new ArrayBuffer(3)) } } });
    const wire = bytes();
    Buffer.from('neighbour-secret-4711 in the pool');
    reader.push(wire);
    expect(broken).toEqual([]);
    expect(got).toHaveLength(8);
    for (const frame of got) {
      const { f, d } = (frame as { message: { result: { value: { f: Float64Array; d: DataView } } } }).message.result.value;
      expect(f).toBeInstanceOf(Float64Array);
      expect([...f]).toEqual([1.5, 2.5]);
      expect(f.buffer.byteLength).toBe(16);
      expect(d).toBeInstanceOf(DataView);
      expect(d.buffer.byteLength).toBe(3);
    }
  });

  it('breaks on two frames in the wrong order', () => {
    const { writer, reader, got, broken, bytes } = pair();
    writer.text(1, 'first');
    const first = bytes();
    writer.text(1, 'second');
    reader.push(Buffer.concat([bytes(), first]));
    expect(got).toEqual([]);
    expect(broken).toHaveLength(1);
  });

  it('does not open a frame sent the other way (each way has keys of its own)', () => {
    const key = newKey();
    const wire: Buffer[] = [];
    const socket = { destroyed: false, cork: () => {}, uncork: () => {}, write: (b: Buffer) => wire.push(Buffer.from(b)) } as unknown as Socket;
    new FrameWriter(socket, key, TO_SANDBOX).text(1, 'down');
    const broken: string[] = [];
    new FrameReader(key, TO_HOST, () => true, () => {}, (r) => broken.push(r)).push(Buffer.concat(wire));
    expect(broken).toHaveLength(1);
  });
});
