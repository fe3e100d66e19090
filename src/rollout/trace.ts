/**
 * The trace: one union of events, each with `seq` and `t` (ms since the run started), kept in
 * memory for the verifier and appended to trace.jsonl as the run goes (see append-file.ts).
 */
import { performance } from 'node:perf_hooks';
import type { TraceEvent, TraceEventInput } from '../types.js';
import { AppendFile } from './append-file.js';

export class Trace {
  readonly events: TraceEvent[] = [];
  readonly #start: number;
  /** A write error (disk full) does not crash the host: the in-memory trace still grades. */
  readonly #file: AppendFile | null;
  #seq = 0;

  /** `file` null keeps the trace in memory only. */
  constructor(file: string | null, start = performance.now()) {
    this.#start = start;
    this.#file = file === null ? null : new AppendFile(file);
  }

  /** ms since the run started. */
  now(): number {
    return round(performance.now() - this.#start);
  }

  add(event: TraceEventInput): TraceEvent {
    const full = { seq: this.#seq++, t: this.now(), ...event } as TraceEvent;
    this.events.push(full);
    this.#file?.append(`${toJsonLine(full)}\n`);
    return full;
  }

  /** Flushes and closes the file. */
  async close(): Promise<void> {
    await this.#file?.close();
  }
}

/** JSON for a trace line; values JSON cannot hold (BigInt, cycles) are written as text. */
export function toJsonLine(value: unknown, space?: number): string {
  try {
    // Plain first: a replacer function makes JSON.stringify about twice as slow, and it is only
    // needed for the rare value that holds a BigInt or a cycle (which throw here).
    return JSON.stringify(value, undefined, space);
  } catch {
    // BigInt or a cycle: below.
  }
  try {
    return JSON.stringify(value, bigintReplacer, space);
  } catch {
    const seen = new WeakSet<object>();
    return JSON.stringify(value, (key, v: unknown) => {
      if (typeof v === 'object' && v !== null) {
        if (seen.has(v)) return '[Circular]';
        seen.add(v);
      }
      return bigintReplacer(key, v);
    }, space);
  }
}

function bigintReplacer(_key: string, value: unknown): unknown {
  return typeof value === 'bigint' ? value.toString() : value;
}

export function round(ms: number): number {
  return Math.round(ms * 1000) / 1000;
}
