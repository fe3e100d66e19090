/**
 * Turning whatever an agent returned into output text: a string as-is, `undefined` as null,
 * anything else as JSON; capped at maxOutputBytes UTF-8 bytes. Used in the worker (first cut)
 * and again by the host (which trusts nothing the worker sends).
 */
import { describeError } from '../errors.js';

export interface CapturedOutput {
  output: string | null;
  truncated: boolean;
  /** Why the value could not be serialised, when it could not. */
  error?: string;
}

/** Serialises an agent's return value. Never throws. */
export function captureOutput(value: unknown, maxBytes: number): CapturedOutput {
  if (value === undefined) return { output: null, truncated: false };
  if (typeof value === 'string') return capText(value, maxBytes);
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch (err) {
    return { output: null, truncated: false, error: `the returned value cannot be serialised as JSON: ${describeError(err)}` };
  }
  if (text === undefined) {
    return { output: null, truncated: false, error: `the returned value (${typeof value}) has no JSON form` };
  }
  return capText(text, maxBytes);
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
