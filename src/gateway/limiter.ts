/** A counting semaphore: at most `max` holders at once, the others wait in arrival order. */
export class Limiter {
  readonly #max: number;
  #inFlight = 0;
  readonly #queue: { grant: () => void }[] = [];

  constructor(max: number) {
    if (!Number.isInteger(max) || max < 1) throw new RangeError(`a limiter needs max >= 1 (got ${max})`);
    this.#max = max;
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  get waiting(): number {
    return this.#queue.length;
  }

  /** Resolves with the function that gives the slot back; rejects if `signal` fires first. */
  acquire(signal?: AbortSignal): Promise<() => void> {
    if (signal?.aborted) return Promise.reject(new Error('aborted'));
    if (this.#inFlight < this.#max) {
      this.#inFlight++;
      return Promise.resolve(this.#releaser());
    }
    return new Promise((resolve, reject) => {
      const entry = {
        grant: () => {
          signal?.removeEventListener('abort', onAbort);
          resolve(this.#releaser());
        },
      };
      const onAbort = (): void => {
        const at = this.#queue.indexOf(entry);
        if (at >= 0) this.#queue.splice(at, 1);
        reject(new Error('aborted'));
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      this.#queue.push(entry);
    });
  }

  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#queue.shift();
      // The slot passes straight to the next in line.
      if (next) next.grant();
      else this.#inFlight--;
    };
  }
}
