/**
 * The trace: one union of events, each with `seq` and `t` (ms since the run started), appended
 * to trace.jsonl as the run goes (see append-file.ts) and kept in memory for the verifier and the
 * diagnosis. What is kept in memory is bounded (TRACE_MEMORY_MAX_CHARS of JSON per run): past
 * it, every event is still kept, but its large parts (a call's input, a result's value and
 * changes, a log's data) are replaced by a note saying how large they were, with a hash so that
 * equal inputs still compare equal. The file always has them whole.
 *
 * With agents in threads of the host (thread mode), the file is checked when it is closed: an
 * agent can write into the host's descriptors, and a file that does not hold exactly what the
 * host wrote is written again from the events in memory.
 */
import { createHash } from 'node:crypto';
import { renameSync, writeFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { AGENT_NOTE_MAX_CHARS, TRACE_MEMORY_MAX_CHARS } from '../options.js';
import type { StateChange, TraceEvent, TraceEventInput } from '../types.js';
import { AppendFile } from './append-file.js';

/**
 * How long events wait to be written to the file together, ms: a tool call answered in its own
 * event-loop turn would otherwise cost a write of its own. The file is whole when closed.
 */
const WRITE_BATCH_MS = 10;

export class Trace {
  readonly events: TraceEvent[] = [];
  readonly #start: number;
  /** A write error (disk full) does not crash the host: the in-memory trace still grades. */
  readonly #file: AppendFile | null;
  readonly #path: string | null;
  readonly #memoryChars: number;
  #seq = 0;
  /** Characters of JSON of the events kept whole in memory. */
  #kept = 0;

  /**
   * `file` null keeps the trace in memory only. `memoryChars` bounds the JSON kept whole in
   * memory (see the file comment). `verify`: check the file on close (see close()); for agents
   * running in threads of this process, which share its descriptors. `after`: the file is opened
   * once this settles (its folder is made meanwhile; see AppendFile).
   */
  constructor(
    file: string | null,
    start = performance.now(),
    { memoryChars = TRACE_MEMORY_MAX_CHARS, verify = false, after }: { memoryChars?: number; verify?: boolean; after?: Promise<unknown> } = {},
  ) {
    this.#start = start;
    this.#path = file;
    this.#file = file === null ? null : new AppendFile(file, { verify, batchMs: WRITE_BATCH_MS, ...(after ? { after } : {}) });
    this.#memoryChars = memoryChars;
  }

  /** ms since the run started. */
  now(): number {
    return round(performance.now() - this.#start);
  }

  add(event: TraceEventInput): TraceEvent {
    const full = { seq: this.#seq++, t: this.now(), ...event } as TraceEvent;
    const line = toJsonLine(full);
    this.#file?.append(`${line}\n`);
    this.#kept += line.length;
    this.events.push(this.#kept <= this.#memoryChars ? full : slim(full, this.#memoryChars));
    return full;
  }


  /**
   * Flushes and closes the file. A file that does not hold exactly what was written to it (an
   * agent in thread mode wrote into the host's descriptor; a write failed) is written again, whole,
   * from the events kept in memory (those past the memory budget without their large parts).
   */
  async close(): Promise<void> {
    if (!this.#file || !this.#path || (await this.#file.close())) return;
    try {
      const tmp = `${this.#path}.${process.pid}.rewrite.tmp`;
      writeFileSync(tmp, this.events.map((e) => `${toJsonLine(e)}\n`).join(''));
      renameSync(tmp, this.#path);
    } catch {
      // (disk full) nothing more can be done for this file
    }
  }
}

/** Values whose JSON is at most this long are kept as they are in a slimmed event. */
const SMALL_CHARS = 256;

/** An event as kept in memory past the budget: its large parts replaced by notes. */
function slim(event: TraceEvent, budget: number): TraceEvent {
  const omit = (value: unknown): unknown => omitted(value, budget);
  switch (event.type) {
    case 'tool_call':
      return { ...event, input: omit(event.input) };
    case 'tool_result': {
      const kept = { ...event } as TraceEvent & { type: 'tool_result' } & Record<string, unknown>;
      if ('value' in kept) kept.value = omit(kept.value);
      if (!kept.ok) kept.error = { ...kept.error, message: kept.error.message.slice(0, AGENT_NOTE_MAX_CHARS) };
      // Where each change was (what the diagnosis reads), not the values.
      if (kept.changes) kept.changes = kept.changes.map(where);
      return kept;
    }
    case 'agent_log': {
      const { data, ...rest } = event;
      return { ...rest, message: event.message.slice(0, AGENT_NOTE_MAX_CHARS), ...(data === undefined ? {} : { data: omit(data) }) };
    }
    default:
      return event;
  }
}

function where(change: StateChange): StateChange {
  return { kind: change.kind, ...(change.path ? { path: change.path } : {}), ...(change.index === undefined ? {} : { index: change.index }), ...(change.item ? { item: where(change.item) } : {}) };
}

/** A value as kept past the budget: itself if small, else its size and a hash (trace.jsonl has it). */
function omitted(value: unknown, budget: number): unknown {
  const text = toJsonLine(value) ?? 'undefined';
  if (text.length <= SMALL_CHARS) return value;
  return {
    omitted: `${text.length} characters of JSON, in trace.jsonl only (this run's trace passed the ${budget} characters kept in memory)`,
    sha1: createHash('sha1').update(text).digest('base64url'),
  };
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
