/**
 * A tool call's input as it arrives from an MCP client, made into the call message the tool-call
 * path takes: measured as JSON text (maxMessageBytes, MAX_INPUT_DEPTH), `__proto__` and
 * `constructor`-holding-an-object keys refused, and re-parsed, so the tool gets plain JSON data
 * whatever the MCP layer made of it. The same rules the host applies to a worker's calls.
 */
import { capToolName, nestingDepth, type CallMessage } from '../pool/channel.js';
import { MAX_INPUT_DEPTH } from '../options.js';
import { BRAND } from '../protocol.js';

export function callMessage(id: number, name: string, args: unknown, maxBytes: number): CallMessage {
  // A name is kept as the host keeps a worker's: capped, so a client cannot flood the trace with one.
  const base = { brand: BRAND, type: 'call' as const, id, name: capToolName(name) };
  let text: string | undefined;
  try {
    text = JSON.stringify(args ?? {});
  } catch (err) {
    return { ...base, inputBytes: 0, inputError: { kind: 'unserialisable', message: (err as Error).message } };
  }
  if (text === undefined) return { ...base, inputBytes: 0, inputError: { kind: 'unserialisable', message: 'the arguments have no JSON form' } };
  const bytes = Buffer.byteLength(text, 'utf8');
  if (bytes > maxBytes) return { ...base, inputBytes: bytes, inputError: { kind: 'too_large', message: `input is ${bytes} bytes` } };
  if (nestingDepth(text, MAX_INPUT_DEPTH) > MAX_INPUT_DEPTH) {
    return { ...base, inputBytes: bytes, inputError: { kind: 'too_deep', message: `input nests deeper than ${MAX_INPUT_DEPTH} levels` } };
  }
  let forbidden: string | undefined;
  const input = JSON.parse(text, (key, value: unknown) => {
    if (key === 'constructor' && typeof value === 'object' && value !== null) forbidden ??= '"constructor" is not allowed as the name of a property that holds an object';
    if (key !== '__proto__') return value;
    forbidden = '"__proto__" is not allowed as a property name';
    return undefined;
  }) as unknown;
  if (forbidden !== undefined) return { ...base, inputBytes: bytes, inputError: { kind: 'forbidden_key', message: forbidden } };
  return { ...base, input, inputBytes: bytes };
}
