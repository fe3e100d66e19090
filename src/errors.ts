/**
 * Silo's own failures (harness faults and user set-up mistakes), each with a stable `code`.
 * Agent mistakes are never SiloErrors: they are ToolResult values in the trace.
 */

export type SiloErrorCode =
  | 'SILO_USAGE'
  | 'SILO_TASK_FILE_NOT_FOUND'
  | 'SILO_TASK_LOAD_FAILED'
  | 'SILO_TASK_INVALID'
  | 'SILO_SCHEMA_INVALID'
  | 'SILO_AGENT_NOT_FOUND'
  | 'SILO_AGENT_LOAD_FAILED'
  | 'SILO_RUN_NOT_FOUND'
  | 'SILO_OUT_NOT_WRITABLE'
  | 'SILO_QUEUE_UNAVAILABLE';

/** A harness or set-up failure with a stable code and a message that says what to do. */
export class SiloError extends Error {
  readonly code: SiloErrorCode;
  constructor(code: SiloErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SiloError';
    this.code = code;
  }
}

/**
 * The text of any thrown value, never throwing itself: an Error's message, a string as is,
 * anything else as JSON or, failing that, a description of what it is. Values thrown by user or
 * agent code may have a `toString` or getters that throw, or no prototype at all.
 */
export function describeError(err: unknown): string {
  try {
    if (err instanceof Error) return typeof err.message === 'string' ? err.message : 'an error without a message';
    if (typeof err === 'string') return err;
    const plain = typeof err !== 'object' || err === null || Array.isArray(err) || Object.getPrototypeOf(err) === Object.prototype;
    if (plain) {
      const json = JSON.stringify(err);
      if (json !== undefined) return json;
    }
    return String(err);
  } catch {
    return `a thrown ${err === null ? 'null' : typeof err} that cannot be turned into text`;
  }
}

/** The data form of any thrown value: errors lose their class when they cross threads. Never throws. */
export function toErrorInfo(err: unknown, code = 'error'): { code: string; message: string; stack?: string } {
  const message = describeError(err);
  try {
    if (err instanceof Error) {
      const own = (err as { code?: unknown }).code;
      const info: { code: string; message: string; stack?: string } = { code: typeof own === 'string' ? own : code, message };
      if (typeof err.stack === 'string') info.stack = err.stack;
      return info;
    }
  } catch {
    // a getter threw: keep what we have
  }
  return { code, message };
}

/** One line saying why a user module did not load, with the location where one is known. */
export function describeModuleError(err: unknown, file: string): string {
  const lines = describeError(err)
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  // esbuild (through tsx): "Transform failed with 1 error:" then "<file>:<line>:<col>: ERROR: ...".
  if (/^Transform failed/.test(lines[0] ?? '') && lines[1]) return `syntax error: ${lines[1]}`;
  const first = lines[0] ?? 'unknown error';
  // tsx's CommonJS path reports a TypeScript syntax error this way outside a "type": "module" package.
  if (/^Cannot require\(\) ES Module .* in a cycle/.test(first)) {
    return `${file} did not compile (tsx reported a require cycle, which is how it reports a syntax error outside a "type": "module" package; check the file's syntax, or rename it .mts)`;
  }
  if (err instanceof SyntaxError && /\.(c|m)?js$/.test(file)) {
    return `syntax error in ${file}: ${first} (\`node --check ${file}\` shows the line)`;
  }
  return first;
}
