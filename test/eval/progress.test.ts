/**
 * Progress on stderr: one live, redrawn line on a terminal; plain lines every few seconds
 * elsewhere (CI), and the last state once at the end.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { formatProgress, linePrinter, PLAIN_PROGRESS_MS, progressPrinter } from '../../src/eval/progress.js';
import type { EvalProgress } from '../../src/eval/run-eval.js';

function progress(extra: Partial<EvalProgress> = {}): EvalProgress {
  return { evalId: 'E', total: 100, done: 20, passed: 15, failed: 4, errors: 1, retries: 0, running: 8, elapsedMs: 10_000, meanRunMs: null, ...extra };
}

/** A stream that keeps what is written to it. */
function stream(isTTY: boolean): NodeJS.WriteStream & { text: string } {
  const s = {
    isTTY,
    text: '',
    write(chunk: string) {
      s.text += chunk;
      return true;
    },
  };
  return s as unknown as NodeJS.WriteStream & { text: string };
}

describe('formatProgress', () => {
  it('shows done/total, passed/failed/errors, what is running, the rate and the ETA', () => {
    expect(formatProgress(progress())).toBe('20/100 · 15 passed, 4 failed, 1 error · 8 running · 2.0/s · ETA 40s');
  });

  it('shows retries only when there are some', () => {
    expect(formatProgress(progress({ retries: 3 }))).toContain(' · 3 retried · ');
    expect(formatProgress(progress())).not.toContain('retried');
  });

  it('says how long it took once every run is done', () => {
    expect(formatProgress(progress({ done: 100, passed: 95, running: 0, elapsedMs: 61_000 }))).toBe('100/100 · 95 passed, 4 failed, 1 error · 0 running · 1.6/s · took 1m01s');
  });

  it('gives minutes and hours for long ETAs, and a dash before the first run ends', () => {
    expect(formatProgress(progress({ done: 1, total: 61, elapsedMs: 1_000 }))).toMatch(/ETA 1m00s$/);
    expect(formatProgress(progress({ done: 1, total: 7201, elapsedMs: 1_000 }))).toMatch(/ETA 2h00m$/);
    expect(formatProgress(progress({ done: 0, elapsedMs: 0 }))).toMatch(/0\.0\/s · ETA –$/);
  });

  it('is sane from the first runs: start-up is not charged to every run left', () => {
    // 100 runs, 32 at a time, 4 s each, after 2 s of start-up: the first run ends at 6 s, and
    // about 12 s are left (4 waves of 4 s, one under way). The rate since the start said 9m54s.
    const first = progress({ done: 1, passed: 1, failed: 0, errors: 0, total: 100, running: 32, elapsedMs: 6_000, meanRunMs: 4_000 });
    expect(formatProgress(first)).toMatch(/ETA 13s$/);
    // With nothing in flight, the rate since the start is all there is.
    expect(formatProgress(progress({ running: 0, meanRunMs: 4_000 }))).toMatch(/ETA 40s$/);
  });
});

describe('progressPrinter', () => {
  beforeEach(() => {
    vi.useFakeTimers();
    vi.setSystemTime(1_000_000);
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('off a terminal prints a plain line at once, then at most one per interval, and the finished state once at the end', () => {
    const out = stream(false);
    const printer = progressPrinter(out);
    printer.update(progress({ done: 1 }));
    printer.update(progress({ done: 2 }));
    vi.advanceTimersByTime(PLAIN_PROGRESS_MS - 1);
    printer.update(progress({ done: 3 }));
    vi.advanceTimersByTime(1);
    printer.update(progress({ done: 4 }));
    printer.update(progress({ done: 100, running: 0 }));
    // (an eval reports its end more than once)
    printer.update(progress({ done: 100, running: 0 }));
    printer.done();
    const lines = out.text.split('\n').filter((l) => l !== '');
    expect(lines.map((l) => l.split(' ')[0])).toEqual(['1/100', '4/100', '100/100']);
    expect(lines.at(-1)).toBe(formatProgress(progress({ done: 100, running: 0 })));
    expect(out.text).not.toContain('\r');
    expect(out.text).not.toContain('\u001b');
  });

  it('off a terminal ends on the last state given, also when the eval stopped short (a cancel), and prints it only once', () => {
    const out = stream(false);
    const printer = progressPrinter(out);
    printer.update(progress({ done: 1 }));
    printer.update(progress({ done: 7, running: 0 }));
    printer.done();
    printer.done();
    expect(out.text.split('\n').filter((l) => l !== '').map((l) => l.split(' ')[0])).toEqual(['1/100', '7/100']);
    // Nothing new since the last line printed: nothing more.
    const again = stream(false);
    const second = progressPrinter(again);
    second.update(progress({ done: 1 }));
    second.done();
    expect(again.text.split('\n').filter((l) => l !== '')).toHaveLength(1);
  });

  it('off a terminal, with a quiet start, prints nothing for short work, and the last state after a long one', () => {
    const format = (p: { done: number }): string => `${p.done}/10`;
    const quiet = (s: NodeJS.WriteStream) => linePrinter(s, format, { finished: (p) => p.done >= 10, quietStart: true });
    const short = stream(false);
    const a = quiet(short);
    a.update({ done: 10 });
    a.done();
    expect(short.text).toBe('');
    const long = stream(false);
    const b = quiet(long);
    vi.advanceTimersByTime(PLAIN_PROGRESS_MS);
    b.update({ done: 3 });
    b.update({ done: 10 });
    b.done();
    expect(long.text).toBe('3/10\n10/10\n');
  });

  it('on a terminal redraws one line in place and clears it when done', () => {
    const previous = process.env.TERM;
    process.env.TERM = 'xterm';
    try {
      const out = stream(true);
      const printer = progressPrinter(out);
      printer.update(progress({ done: 1 }));
      vi.advanceTimersByTime(150);
      printer.update(progress({ done: 2 }));
      printer.done();
      expect(out.text).toBe(`\r\u001b[2K${formatProgress(progress({ done: 1 }))}\r\u001b[2K${formatProgress(progress({ done: 2 }))}\r\u001b[2K`);
      expect(out.text).not.toContain('\n');
    } finally {
      if (previous === undefined) delete process.env.TERM;
      else process.env.TERM = previous;
    }
  });
});
