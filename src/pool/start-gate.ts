/**
 * How many agent workers start at once. A thread's start is CPU work (~25–35 ms in Node 20), and
 * so is its runner's part of it (the sandbox's main thread builds each Worker): 256 rollouts that
 * all start their workers at once have 256 threads compete for two cores with the thread that
 * relays their messages, so every start takes seconds, the sandbox answers nothing for as long,
 * and starts overrun their deadline. Started a few at a time, each start takes what it costs,
 * and the rollouts behind wait their turn without their start clock running.
 */
import { availableParallelism } from 'node:os';

/**
 * Workers that start at once per runner: four per core (a start also waits: on its runner's
 * main thread, on the link), at least 8. Measured on 2 cores, 256 rollouts at once under load:
 * 8 or 16 at a time 0.93–1.19× the bare Workers' time, 64 at a time up to 3× (starts timed out).
 */
export const START_SLOTS = Math.max(8, 4 * availableParallelism());

/** A counting gate: at most `slots` holders at once, the others served in the order they came. */
export class StartGate {
  #free: number;
  readonly #queue: Array<() => void> = [];

  constructor(slots: number = START_SLOTS) {
    this.#free = slots;
  }

  /** Rollouts waiting for their turn. */
  get waiting(): number {
    return this.#queue.length;
  }

  /**
   * Resolves when a start may begin, with the function that ends it (idempotent), or with null
   * when `signal` aborts first (the rollout ended before its turn: nothing was taken).
   */
  acquire(signal?: AbortSignal): Promise<(() => void) | null> {
    if (signal?.aborted) return Promise.resolve(null);
    if (this.#free > 0) {
      this.#free--;
      return Promise.resolve(this.#releaser());
    }
    return new Promise((resolve) => {
      const turn = (): void => {
        signal?.removeEventListener('abort', leave);
        resolve(this.#releaser());
      };
      const leave = (): void => {
        const at = this.#queue.indexOf(turn);
        if (at >= 0) this.#queue.splice(at, 1);
        resolve(null);
      };
      this.#queue.push(turn);
      signal?.addEventListener('abort', leave, { once: true });
    });
  }

  #releaser(): () => void {
    let released = false;
    return () => {
      if (released) return;
      released = true;
      const next = this.#queue.shift();
      // The slot passes straight to the next in line, or is free again.
      if (next) next();
      else this.#free++;
    };
  }
}

const gates = new WeakMap<object, StartGate>();

/** The gate of `runner` (one per runner: its workers compete for the same cores and main thread). */
export function startGate(runner: object): StartGate {
  let gate = gates.get(runner);
  if (!gate) gates.set(runner, (gate = new StartGate()));
  return gate;
}
