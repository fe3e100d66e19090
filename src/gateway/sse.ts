/**
 * Server-sent events read as they pass: the relay writes every chunk on at once and hands a copy
 * here, which cuts the text into events (at a blank line) so the usage in them can be read. An
 * event is never longer than MAX_EVENT_CHARS here; past it the reader gives up (the relay goes on).
 */
import { StringDecoder } from 'node:string_decoder';

/** One event of a stream. */
export interface SseEvent {
  /** The `event:` field, when the event has one. */
  event: string | null;
  /** The `data:` lines, joined by newlines. */
  data: string;
  /** The event's text as it came, its blank line included. */
  raw: string;
}

/** Longest event text kept while waiting for its end (the usage events are a few hundred bytes). */
export const MAX_EVENT_CHARS = 8 * 1024 * 1024;

const BOUNDARY = /\r\n\r\n|\n\n|\r\r/g;

/** Cuts a stream's bytes into events. */
export class SseReader {
  readonly #decoder = new StringDecoder('utf8');
  #buffer = '';
  /** Set when an event grew past MAX_EVENT_CHARS: from then on text passes through unread. */
  #gaveUp = false;

  get gaveUp(): boolean {
    return this.#gaveUp;
  }

  /**
   * The events that end in `chunk` (with what came before it). Once an event grew past
   * MAX_EVENT_CHARS, text comes back as it is, in events with no data, so that a relay that
   * writes the events' text on still writes every byte.
   */
  push(chunk: Buffer): SseEvent[] {
    if (this.#gaveUp) return [{ event: null, data: '', raw: this.#decoder.write(chunk) }];
    const text = this.#buffer + this.#decoder.write(chunk);
    const events: SseEvent[] = [];
    let start = 0;
    BOUNDARY.lastIndex = 0;
    for (let m = BOUNDARY.exec(text); m !== null; m = BOUNDARY.exec(text)) {
      const end = m.index + m[0].length;
      events.push(parseEvent(text.slice(start, end)));
      start = end;
    }
    this.#buffer = text.slice(start);
    if (this.#buffer.length > MAX_EVENT_CHARS) {
      this.#gaveUp = true;
      events.push({ event: null, data: '', raw: this.#buffer });
      this.#buffer = '';
    }
    return events;
  }

  /** What is left at the end of the stream: an event without its blank line, if any. */
  end(): SseEvent[] {
    const rest = this.#buffer + this.#decoder.end();
    this.#buffer = '';
    if (rest === '') return [];
    return this.#gaveUp || rest.trim() === '' ? [{ event: null, data: '', raw: rest }] : [parseEvent(rest)];
  }
}

function parseEvent(raw: string): SseEvent {
  let event: string | null = null;
  const data: string[] = [];
  for (const line of raw.split(/\r\n|\n|\r/)) {
    if (line.startsWith('data:')) data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
    else if (line.startsWith('event:')) event = line.slice(line.startsWith('event: ') ? 7 : 6);
  }
  return { event, data: data.join('\n'), raw };
}
