import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppendFile } from '../../src/rollout/append-file.js';
import { toJsonLine, Trace } from '../../src/rollout/trace.js';
import { tempDir } from '../helpers.js';

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
/** Until the background open (a thread-pool round trip) has completed and its lines are written. */
async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 1_000 && !condition(); i++) await new Promise((resolve) => setTimeout(resolve, 1));
}

describe('AppendFile', () => {
  let temp: ReturnType<typeof tempDir>;
  beforeEach(() => (temp = tempDir('silo-append-')));
  afterEach(() => temp.remove());

  it('appends lines in order, those given before the file was open included', async () => {
    const file = join(temp.dir, 'lines.jsonl');
    const lines = new AppendFile(file);
    lines.append('one\n');
    lines.append('two\n');
    await lines.close();
    expect(readFileSync(file, 'utf8')).toBe('one\ntwo\n');
  });

  it('writes lines while it is open, within a turn of the event loop', async () => {
    const file = join(temp.dir, 'lines.jsonl');
    const lines = new AppendFile(file);
    lines.append('first\n');
    await until(() => existsSync(file) && readFileSync(file, 'utf8') === 'first\n');
    lines.append('second\n');
    lines.append('third\n');
    await nextTurn();
    expect(readFileSync(file, 'utf8')).toBe('first\nsecond\nthird\n');
    await lines.close();
  });

  it('appends to a file that exists', async () => {
    const file = join(temp.dir, 'lines.jsonl');
    const first = new AppendFile(file);
    first.append('a\n');
    await first.close();
    const second = new AppendFile(file);
    second.append('b\n');
    await second.close();
    expect(readFileSync(file, 'utf8')).toBe('a\nb\n');
  });

  it('drops lines given after close, and closing twice is harmless', async () => {
    const file = join(temp.dir, 'lines.jsonl');
    const lines = new AppendFile(file);
    lines.append('kept\n');
    await Promise.all([lines.close(), lines.close()]);
    lines.append('dropped\n');
    await nextTurn();
    expect(readFileSync(file, 'utf8')).toBe('kept\n');
  });

  it('never throws or rejects when the file cannot be opened', async () => {
    const lines = new AppendFile(join(temp.dir, 'no-such-folder', 'lines.jsonl'));
    lines.append('lost\n');
    await expect(lines.close()).resolves.toBeUndefined();
    lines.append('also lost\n');
  });

  it('keeps text in UTF-8 whole', async () => {
    const file = join(temp.dir, 'lines.jsonl');
    const lines = new AppendFile(file);
    lines.append('ünïcødé ✓ 𝄞\n');
    await lines.close();
    expect(readFileSync(file, 'utf8')).toBe('ünïcødé ✓ 𝄞\n');
  });
});

describe('Trace', () => {
  let temp: ReturnType<typeof tempDir>;
  beforeEach(() => (temp = tempDir('silo-trace-')));
  afterEach(() => temp.remove());

  it('keeps every event in memory and writes the same lines to its file', async () => {
    const file = join(temp.dir, 'trace.jsonl');
    const trace = new Trace(file);
    trace.add({ type: 'run_started', taskId: 't', agent: 'a', seed: 1 });
    trace.add({ type: 'agent_log', message: 'hello' });
    await trace.close();
    const lines = readFileSync(file, 'utf8').trim().split('\n').map((line) => JSON.parse(line) as unknown);
    expect(lines).toEqual(trace.events);
    expect(trace.events.map((e) => e.seq)).toEqual([0, 1]);
  });
});

describe('toJsonLine', () => {
  it('writes plain values as JSON.stringify does', () => {
    const value = { a: 1, b: [true, null, 'x'], c: { d: 1.5 } };
    expect(toJsonLine(value)).toBe(JSON.stringify(value));
    expect(toJsonLine(value, 2)).toBe(JSON.stringify(value, null, 2));
  });

  it('writes a BigInt as text and a cycle as a marker', () => {
    const loop: Record<string, unknown> = { n: 10n };
    expect(toJsonLine(loop)).toBe('{"n":"10"}');
    loop.self = loop;
    expect(toJsonLine(loop)).toBe('{"n":"10","self":"[Circular]"}');
  });
});
