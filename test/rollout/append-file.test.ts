import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppendFile } from '../../src/rollout/append-file.js';
import { toJsonLine, Trace } from '../../src/rollout/trace.js';
import { tempDir } from '../helpers.js';
import { AGENT_NOTE_MAX_CHARS } from '../../src/options.js';

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

  it('with batchMs, writes what came meanwhile together, later than the turn; whole when closed', async () => {
    const file = join(temp.dir, 'lines.jsonl');
    const lines = new AppendFile(file, { batchMs: 60_000 });
    lines.append('first\n');
    // Lines that came before the file was open are written as it opens.
    await until(() => existsSync(file) && readFileSync(file, 'utf8') === 'first\n');
    lines.append('second\n');
    await nextTurn();
    await nextTurn();
    // (a minute is far longer than this test can take: the second line is not written yet)
    expect(readFileSync(file, 'utf8')).toBe('first\n');
    await lines.close();
    expect(readFileSync(file, 'utf8')).toBe('first\nsecond\n');

    const soon = new AppendFile(join(temp.dir, 'soon.jsonl'), { batchMs: 1 });
    soon.append('one\n');
    await until(() => existsSync(join(temp.dir, 'soon.jsonl')) && readFileSync(join(temp.dir, 'soon.jsonl'), 'utf8') === 'one\n');
    soon.append('two\n');
    await until(() => readFileSync(join(temp.dir, 'soon.jsonl'), 'utf8') === 'one\ntwo\n');
    expect(readFileSync(join(temp.dir, 'soon.jsonl'), 'utf8')).toBe('one\ntwo\n');
    await soon.close();
  });

  it('writes at once, in pieces, what piles up within one turn (never one string too long to make)', async () => {
    const file = join(temp.dir, 'lines.jsonl');
    const lines = new AppendFile(file);
    const line = `${'x'.repeat(600 * 1024)}\n`;
    // Synchronously, before the background open has even completed.
    for (let i = 0; i < 4; i++) lines.append(line);
    expect(readFileSync(file, 'utf8').length).toBeGreaterThanOrEqual(2 * line.length);
    await lines.close();
    expect(readFileSync(file, 'utf8')).toBe(line.repeat(4));
  });

  it('with verify, tells whether the file holds exactly what it appended', async () => {
    const intact = new AppendFile(join(temp.dir, 'intact.jsonl'), { verify: true });
    intact.append('one\n');
    await nextTurn();
    intact.append('two\n');
    await expect(intact.close()).resolves.toBe(true);
    // Someone else appends to it meanwhile (an agent thread writing to the host's descriptor).
    const file = join(temp.dir, 'forged.jsonl');
    const forged = new AppendFile(file, { verify: true });
    forged.append('one\n');
    await until(() => existsSync(file) && readFileSync(file, 'utf8') === 'one\n');
    appendFileSync(file, 'forged\n');
    forged.append('two\n');
    await expect(forged.close()).resolves.toBe(false);
    // Or cuts it and writes as much back.
    const cut = join(temp.dir, 'cut.jsonl');
    const truncated = new AppendFile(cut, { verify: true });
    truncated.append('abcd\n');
    await until(() => existsSync(cut) && readFileSync(cut, 'utf8') === 'abcd\n');
    writeFileSync(cut, 'wxyz\n');
    await expect(truncated.close()).resolves.toBe(false);
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

  it('never throws or rejects when the file cannot be opened, and says the lines were lost', async () => {
    const lines = new AppendFile(join(temp.dir, 'no-such-folder', 'lines.jsonl'));
    lines.append('lost\n');
    await expect(lines.close()).resolves.toBe(false);
    lines.append('also lost\n');
  });

  it('with after, opens the file once it settles (its folder made meanwhile); lines given before wait', async () => {
    const folder = join(temp.dir, 'made-later');
    const file = join(folder, 'lines.jsonl');
    let make!: () => void;
    const made = new Promise<void>((resolve) => (make = resolve));
    const lines = new AppendFile(file, { after: made });
    lines.append('early\n');
    await nextTurn();
    expect(existsSync(folder)).toBe(false);
    mkdirSync(folder);
    make();
    await until(() => existsSync(file) && readFileSync(file, 'utf8') === 'early\n');
    lines.append('late\n');
    await expect(lines.close()).resolves.toBe(true);
    expect(readFileSync(file, 'utf8')).toBe('early\nlate\n');
  });

  it('with after that rejects, never opens the file and says the lines were lost', async () => {
    const file = join(temp.dir, 'never.jsonl');
    const refused = Promise.reject(new Error('no folder'));
    const lines = new AppendFile(file, { after: refused });
    lines.append('lost\n');
    await expect(lines.close()).resolves.toBe(false);
    expect(existsSync(file)).toBe(false);
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

describe('the trace kept in memory', () => {
  let temp: ReturnType<typeof tempDir>;
  beforeEach(() => (temp = tempDir('silo-trace-')));
  afterEach(() => temp.remove());

  it('keeps events past its budget without their large parts, and writes them whole to its file', async () => {
    const file = join(temp.dir, 'trace.jsonl');
    const trace = new Trace(file, undefined, { memoryChars: 10_000 });
    const input = { text: 'i'.repeat(8_000) };
    trace.add({ type: 'tool_call', callId: 1, name: 'tool', input });
    trace.add({ type: 'tool_call', callId: 2, name: 'tool', input });
    trace.add({ type: 'tool_call', callId: 3, name: 'tool', input: { small: true } });
    trace.add({ type: 'tool_call', callId: 4, name: 'tool', input });
    const changes = [{ kind: 'E' as const, path: ['a', 0], lhs: 'l'.repeat(5_000), rhs: 'r' }];
    trace.add({ type: 'tool_result', callId: 4, durationMs: 1, ok: false, error: { code: 'tool_error', message: 'm'.repeat(5_000) }, changes });
    trace.add({ type: 'agent_log', message: 'g'.repeat(5_000), data: { d: 'd'.repeat(5_000) } });
    await trace.close();
    const [first, second, third, fourth, result, log] = trace.events as any[];
    expect(first.input).toBe(input);
    // Past the budget: a note with the size and a hash, equal for equal inputs.
    expect(second.input).toEqual({ omitted: expect.stringMatching(/^8011 characters of JSON, in trace.jsonl only \(this run's trace passed the 10000 characters kept in memory\)$/), sha1: expect.any(String) });
    expect(fourth.input).toEqual(second.input);
    expect(third.input).toEqual({ small: true });
    expect(result.error.message).toHaveLength(AGENT_NOTE_MAX_CHARS);
    expect(result.changes).toEqual([{ kind: 'E', path: ['a', 0] }]);
    expect(log.message).toHaveLength(AGENT_NOTE_MAX_CHARS);
    expect(log.data).toMatchObject({ omitted: expect.any(String) });
    // The file has every event whole.
    const lines = readFileSync(file, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { input?: unknown });
    expect(lines[1]?.input).toEqual(input);
    expect(lines.map((l) => (l as { seq: number }).seq)).toEqual([0, 1, 2, 3, 4, 5]);
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
