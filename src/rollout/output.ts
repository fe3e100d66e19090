/**
 * Turning whatever an agent returned into output text: a string as-is, `undefined` as null,
 * anything else as JSON (what JSON leaves out of an object, a function or an undefined property,
 * is left out); capped at maxOutputBytes UTF-8 bytes. Used in the worker (first cut) and again by
 * the host (which trusts nothing the worker sends). A value with no JSON text at all (circular, a
 * BigInt, a bare function) is output null and a reason, which fails the run (see grade.ts).
 */
import { describeError } from '../errors.js';

export interface CapturedOutput {
  output: string | null;
  truncated: boolean;
  /** Why the value could not be recorded, when it could not: one line, for the trace and result.json. */
  error?: string;
}

/** The start of every reason an output could not be recorded. */
export const UNRECORDED_OUTPUT = "the agent's output could not be recorded";

/** Serialises an agent's return value. Never throws. */
export function captureOutput(value: unknown, maxBytes: number): CapturedOutput {
  if (value === undefined) return { output: null, truncated: false };
  if (typeof value === 'string') return capText(value, maxBytes);
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    return { output: null, truncated: false, error: `${UNRECORDED_OUTPUT}: ${whyNotJson(value, err)}` };
  }
  if (text === undefined) {
    return { output: null, truncated: false, error: `${UNRECORDED_OUTPUT}: a ${typeof value} has no JSON form` };
  }
  return capText(text, maxBytes);
}

/** Values looked at to say where JSON failed, at most (past them, JSON's own reason is given). */
const WHY_MAX_VALUES = 100_000;

/**
 * Where and why JSON.stringify failed on `value` (which it threw `err` for): it walks the value as
 * JSON does (toJSON first, own enumerable keys, the chain of parents for a circle) to the first
 * place that fails, `it is circular (at .a.b)`. Past WHY_MAX_VALUES values, or if the walk fails
 * itself (a structure too deep to walk), JSON's own reason.
 */
function whyNotJson(value: unknown, err: unknown): string {
  const parents = new Set<object>();
  let seen = 0;
  const visit = (key: string, v: unknown, path: string): string | undefined => {
    if (++seen > WHY_MAX_VALUES) throw err;
    const at = path === '' ? '' : ` (at ${path})`;
    if ((typeof v === 'object' && v !== null) || typeof v === 'bigint') {
      let toJSON: unknown;
      try {
        toJSON = (v as { toJSON?: unknown }).toJSON;
        if (typeof toJSON === 'function') v = (toJSON as (key: string) => unknown).call(v, key);
      } catch (thrown) {
        return `${typeof toJSON === 'function' ? 'its toJSON threw' : 'reading its toJSON threw'}${at}: ${describeError(thrown)}`;
      }
    }
    if (typeof v === 'bigint') return path === '' ? 'it is a BigInt' : `it holds a BigInt${at}`;
    if (typeof v !== 'object' || v === null) return undefined;
    if (parents.has(v)) return `it is circular${at === '' ? ' (at the top)' : at}`;
    parents.add(v);
    const object = v as Record<string, unknown>;
    const entry = (k: string, below: string): string | undefined => {
      let child: unknown;
      try {
        child = object[k];
      } catch (thrown) {
        return `reading ${below} threw: ${describeError(thrown)}`;
      }
      return visit(k, child, below);
    };
    if (Array.isArray(v)) {
      // (an index at a time: a sparse array's length may be in the billions)
      for (let i = 0; i < v.length; i++) {
        const why = entry(String(i), `${path}[${i}]`);
        if (why !== undefined) return why;
      }
    } else {
      for (const k of Object.keys(v)) {
        const why = entry(k, `${path}${/^[A-Za-z_$][\w$]*$/.test(k) ? `.${k}` : `[${JSON.stringify(k)}]`}`);
        if (why !== undefined) return why;
      }
    }
    parents.delete(v);
    return undefined;
  };
  try {
    return visit('', value, '') ?? `JSON failed: ${describeError(err)}`;
  } catch {
    return `JSON failed: ${describeError(err)}`;
  }
}

/** Cuts `text` to at most `maxBytes` UTF-8 bytes without splitting a character. */
export function capText(text: string, maxBytes: number): CapturedOutput {
  // Fast path: no string of n UTF-16 units takes more than 3n bytes.
  if (text.length * 3 <= maxBytes || Buffer.byteLength(text, 'utf8') <= maxBytes) {
    return { output: text, truncated: false };
  }
  const bytes = Buffer.from(text, 'utf8');
  let end = maxBytes;
  // Step back over continuation bytes (10xxxxxx) so a multi-byte character is not split.
  while (end > 0 && ((bytes[end] ?? 0) & 0xc0) === 0x80) end--;
  return { output: bytes.subarray(0, end).toString('utf8'), truncated: true };
}
