/**
 * Retries of a model request after a transient failure (HTTP 408, 429 or 5xx, or no response),
 * with exponential backoff. Each wait is logged, so it shows in the trace. Runs in agent workers.
 */

export interface RetryOptions {
  signal: AbortSignal;
  log(message: string, data?: unknown): void;
  /** Retries after the first attempt. */
  retries?: number;
  /** The first wait, ms; it doubles each time. */
  baseMs?: number;
  /** No wait is longer, whatever the server asks for. */
  maxMs?: number;
  /** What the log lines call the request, e.g. the model. */
  label: string;
  /** True for an error that means no response came (the SDK's connection error). */
  noResponse(err: unknown): boolean;
}

/** Waits a server may ask for with `retry-after-ms` or `retry-after` are honoured up to maxMs. */
export async function withRetries<T>(request: () => Promise<T>, opts: RetryOptions): Promise<T> {
  const retries = opts.retries ?? 4;
  const baseMs = opts.baseMs ?? 500;
  const maxMs = opts.maxMs ?? 30_000;
  for (let attempt = 0; ; attempt++) {
    try {
      return await request();
    } catch (err) {
      const status = statusOf(err);
      const transient = status === undefined ? opts.noResponse(err) : status === 429 || status === 408 || status >= 500;
      if (opts.signal.aborted || attempt >= retries || !transient) throw err;
      const asked = retryAfterMs(err);
      const waitMs = Math.min(maxMs, asked ?? baseMs * 2 ** attempt * (0.75 + Math.random() * 0.5));
      opts.log(`model request failed (${status ?? 'no response'}); retry ${attempt + 1} of ${retries} in ${Math.round(waitMs)} ms`, {
        model: opts.label,
        status: status ?? null,
        error: err instanceof Error ? err.message : String(err),
        retry: attempt + 1,
        waitMs: Math.round(waitMs),
      });
      await sleep(waitMs, opts.signal);
    }
  }
}

function statusOf(err: unknown): number | undefined {
  const status = (err as { status?: unknown } | null)?.status;
  return typeof status === 'number' ? status : undefined;
}

function retryAfterMs(err: unknown): number | undefined {
  const headers = (err as { headers?: unknown } | null)?.headers;
  if (!(headers instanceof Headers)) return undefined;
  const ms = Number(headers.get('retry-after-ms') ?? Number.NaN);
  if (Number.isFinite(ms) && ms >= 0) return ms;
  const s = Number(headers.get('retry-after') ?? Number.NaN);
  if (Number.isFinite(s) && s >= 0) return s * 1000;
  return undefined;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(signal.reason as Error);
    };
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
