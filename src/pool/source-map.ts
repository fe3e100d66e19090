/**
 * Stack traces of a compiled (TypeScript) agent name the compiled module, a file in a temporary
 * folder the user never wrote. The host maps those positions back to the agent's own files with
 * the source map the compiler made, when an agent's error or log reaches the trace: nothing is
 * paid per rollout, and the worker never parses a source map.
 */
import { SourceMap, type SourceMapPayload } from 'node:module';
import { pathToFileURL } from 'node:url';

/** Characters put in front of a source file's first line (after a shebang) by the compiler. */
export interface Shift {
  /** 0-based line of the original file where they went. */
  line: number;
  chars: number;
}

export class StackMapper {
  readonly #payload: SourceMapPayload | (() => SourceMapPayload);
  readonly #shifts: ReadonlyMap<string, Shift>;
  /**
   * `file` as a path or a file URL (with the query a fresh instance adds), then :line:column. Every
   * part is bounded, so the time stays linear in the text whatever an agent logs.
   */
  readonly #frame: RegExp;
  readonly #marker: string;
  #map: SourceMap | undefined;

  /**
   * `file`: the compiled module. `payload`: its source map, with absolute paths as sources (or
   * what reads it, on the first stack that needs it).
   * `shifts`: source files whose first line the compiler lengthened, and by how much.
   */
  constructor(file: string, payload: SourceMapPayload | (() => SourceMapPayload), shifts: ReadonlyMap<string, Shift>) {
    this.#payload = payload;
    this.#shifts = shifts;
    const path = escape(file);
    const url = escape(pathToFileURL(file).href);
    this.#frame = new RegExp(`(?:${url}|${path})(?:\\?silo-instance=\\d{1,15})?:(\\d{1,9}):(\\d{1,9})`, 'g');
    this.#marker = file.slice(file.lastIndexOf('/') + 1);
  }

  /** `text` (a stack, a message) with the compiled module's positions replaced by the sources'. */
  map(text: string): string {
    if (!text.includes(this.#marker)) return text;
    return text.replace(this.#frame, (whole, line: string, column: string) => {
      const entry = this.#sourceMap().findEntry(Number(line) - 1, Number(column) - 1);
      // findEntry gives the nearest mapping before the position, maybe lines above: only a
      // mapping on the same line says where this position came from.
      if (!('originalSource' in entry) || entry.generatedLine !== Number(line) - 1) return whole;
      const shift = this.#shifts.get(entry.originalSource);
      const originalColumn = shift && shift.line === entry.originalLine ? Math.max(0, entry.originalColumn - shift.chars) : entry.originalColumn;
      return `${entry.originalSource}:${entry.originalLine + 1}:${originalColumn + 1}`;
    });
  }

  /** Parsed on the first stack that needs it (a big agent's map takes a few milliseconds). */
  #sourceMap(): SourceMap {
    this.#map ??= new SourceMap(typeof this.#payload === 'function' ? this.#payload() : this.#payload);
    return this.#map;
  }
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
}
