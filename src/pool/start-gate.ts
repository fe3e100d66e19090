/**
 * How many agent workers start at once. A thread's start is CPU work (~25–35 ms in Node 20), and
 * so is its runner's part of it (the sandbox's main thread builds each Worker): 256 rollouts that
 * all start their workers at once have 256 threads compete for two cores with the thread that
 * relays their messages, so every start takes seconds, the sandbox answers nothing for as long,
 * and starts overrun their deadline. Started a few at a time, each start takes what it costs,
 * and the rollouts behind wait their turn without their start clock running.
 */
import { availableParallelism } from 'node:os';
import { Limiter } from '../gateway/limiter.js';

/**
 * Workers that start at once per runner: four per core (a start also waits: on its runner's
 * main thread, on the link), at least 8. Measured on 2 cores, 256 rollouts at once under load:
 * 8 or 16 at a time 0.93–1.19× the bare Workers' time, 64 at a time up to 3× (starts timed out).
 */
export const START_SLOTS = Math.max(8, 4 * availableParallelism());

const gates = new WeakMap<object, Limiter>();

/** The gate of `runner` (one per runner: its workers compete for the same cores and main thread). */
export function startGate(runner: object): Limiter {
  let gate = gates.get(runner);
  if (!gate) gates.set(runner, (gate = new Limiter(START_SLOTS)));
  return gate;
}
