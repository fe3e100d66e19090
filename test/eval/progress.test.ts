/**
 * Progress on stderr: one live, redrawn line on a terminal; plain lines every few seconds
 * elsewhere (CI), never the finished state (the report follows it).
 */
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { formatProgress, PLAIN_PROGRESS_MS, progressPrinter } from '../../src/eval/progress.js';
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

  it('off a terminal prints a plain line at once, then at most one per interval, and not the finished state', () => {
    const out = stream(false);
    const printer = progressPrinter(out);
    printer.update(progress({ done: 1 }));
    printer.update(progress({ done: 2 }));
    vi.advanceTimersByTime(PLAIN_PROGRESS_MS - 1);
    printer.update(progress({ done: 3 }));
    vi.advanceTimersByTime(1);
    printer.update(progress({ done: 4 }));
    printer.update(progress({ done: 100, running: 0 }));
    printer.done();
    const lines = out.text.split('\n').filter((l) => l !== '');
    expect(lines.map((l) => l.split(' ')[0])).toEqual(['1/100', '4/100']);
    expect(out.text).not.toContain('\r');
    expect(out.text).not.toContain('\u001b');
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
