/**
 * Progress of an eval on stderr: on a terminal one live line (done/total, passed/failed/errors,
 * rate, ETA); elsewhere (CI) a plain line every few seconds, and the last state once at the end.
 */
import type { EvalProgress } from './run-eval.js';

/** How often a plain (non-TTY) progress line is printed. */
export const PLAIN_PROGRESS_MS = 5_000;
/** How often the live line is redrawn at most. */
const LIVE_REDRAW_MS = 100;

export interface ProgressPrinter<P = EvalProgress> {
  update(p: P): void;
  /** Clears the live line (before the report is printed); off a terminal, prints the last state if it was not. */
  done(): void;
}

/** The eval's printer: the first update at once, the last state at the end. */
export function progressPrinter(stream: NodeJS.WriteStream = process.stderr): ProgressPrinter<EvalProgress> {
  return linePrinter(stream, formatProgress, { finished: (p) => p.done >= p.total && p.running === 0, quietStart: false });
}

/**
 * A progress line: redrawn in place on a terminal, a plain line every few seconds elsewhere. Off a
 * terminal, `done()` prints the last state once unless it is the last line printed, so a log never
 * ends on a stale count. `quietStart` waits one interval before the first line, so short work
 * prints nothing (not even its last state).
 */
export function linePrinter<P>(
  stream: NodeJS.WriteStream,
  format: (p: P) => string,
  options: { finished: (p: P) => boolean; quietStart: boolean },
): ProgressPrinter<P> {
  const live = stream.isTTY === true && process.env.TERM !== 'dumb';
  let last = options.quietStart ? Date.now() : 0;
  let shown = false;
  // Off a terminal: the last state given, until it is printed.
  let unprinted: P | undefined;
  return {
    update(p) {
      const now = Date.now();
      const finished = options.finished(p);
      unprinted = p;
      if (now - last < (live ? LIVE_REDRAW_MS : PLAIN_PROGRESS_MS) && !finished) return;
      // (off a terminal the finished state waits for done(): an eval may report it more than once)
      if (finished && (options.quietStart || !live)) return;
      last = now;
      shown = true;
      unprinted = undefined;
      stream.write(live ? `\r\u001b[2K${format(p)}` : `${format(p)}\n`);
    },
    done() {
      if (live && shown) stream.write('\r\u001b[2K');
      if (!live && shown && unprinted !== undefined) stream.write(`${format(unprinted)}\n`);
      unprinted = undefined;
    },
  };
}

export function formatProgress(p: EvalProgress): string {
  const seconds = p.elapsedMs / 1000;
  const rate = seconds > 0 ? p.done / seconds : 0;
  const secondsLeft = etaSeconds(p, rate);
  const eta = p.done >= p.total && p.running === 0 ? `took ${duration(seconds)}` : secondsLeft === undefined ? 'ETA –' : `ETA ${duration(secondsLeft)}`;
  const retries = p.retries > 0 ? ` · ${p.retries} retried` : '';
  return `${p.done}/${p.total} · ${p.passed} passed, ${p.failed} failed, ${p.errors} ${p.errors === 1 ? 'error' : 'errors'}${retries} · ${p.running} running · ${rate.toFixed(1)}/s · ${eta}`;
}

/**
 * Seconds left. While rollouts run, Little's law: `running` runs in flight that take `meanRunMs`
 * each finish `running / meanRunMs` runs a millisecond. The rate since the start would count the
 * start-up (a sandbox booting, the first workers starting) as if every run paid it, and on a
 * 15-second eval it said 5 minutes. Without runs in flight, the rate since the start.
 */
function etaSeconds(p: EvalProgress, rate: number): number | undefined {
  const left = p.total - p.done;
  if (p.done === 0) return undefined;
  if (p.running > 0 && p.meanRunMs !== null && p.meanRunMs !== undefined) return (p.meanRunMs * left) / p.running / 1000;
  return rate > 0 ? left / rate : undefined;
}

function duration(seconds: number): string {
  if (seconds < 60) return `${Math.ceil(seconds)}s`;
  const m = Math.floor(seconds / 60);
  return m < 60 ? `${m}m${String(Math.round(seconds % 60)).padStart(2, '0')}s` : `${Math.floor(m / 60)}h${String(m % 60).padStart(2, '0')}m`;
}
