/** Waiting with a bound. The timers are cleared as soon as the awaited promise settles. */

/** Marks a wait that ran out of time. */
export const TIMED_OUT: unique symbol = Symbol('timed out');

/**
 * Resolves with the promise's value, or with TIMED_OUT after `ms`. The timer keeps the process
 * alive while it waits (a rollout in progress must never let Node exit under it).
 */
export async function within<T>(promise: Promise<T>, ms: number): Promise<T | typeof TIMED_OUT> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<typeof TIMED_OUT>((resolve) => {
    timer = setTimeout(() => resolve(TIMED_OUT), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Hands out turns of the event loop one at a time: each caller resumes in a turn of its own, after
 * the previous caller's, with I/O looked at in between.
 */
export function turnTaker(): () => Promise<void> {
  let last = Promise.resolve();
  return () => (last = last.then(() => new Promise<void>((resolve) => setImmediate(resolve))));
}

/** A duration for people: 0.15ms, 210ms, 3.2s. */
export function ms(value: number): string {
  if (value < 1) return `${value.toFixed(2)}ms`;
  if (value < 1000) return `${Math.round(value)}ms`;
  return `${(value / 1000).toFixed(1)}s`;
}
