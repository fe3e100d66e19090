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
  | 'SILO_QUEUE_UNAVAILABLE'
  | 'SILO_MISSING_PACKAGE';

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
    if (err instanceof Error) {
      const message = typeof err.message === 'string' ? err.message : 'an error without a message';
      return withPermission(err, message);
    }
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

/** What an agent's worker may not do, by the permission Node names, and what to do about it. */
export const PERMISSION_ADVICE: Record<string, string> = {
  FileSystemRead: "an agent may read only its own folder and its node_modules: move the file into the agent's folder (or into a package)",
  FileSystemWrite: 'an agent may not write files: keep what it makes in memory',
  WorkerThreads: 'an agent may not start worker threads (a logger or a pool that starts one, say): turn that off',
  ChildProcess: 'an agent may not start processes',
  Inspector: 'an agent may not use the inspector',
  Addon: 'an agent may not load native addons: use a JavaScript or WebAssembly package instead',
  WASI: 'an agent may not use WASI',
};

/**
 * Node's `ERR_ACCESS_DENIED` says only "Access to this API has been restricted"; the permission and
 * the resource it carries say what was refused: `... (FileSystemRead /abs/path/lib.mjs): <advice>`.
 */
function withPermission(err: Error, message: string): string {
  const e = err as { code?: unknown; permission?: unknown; resource?: unknown };
  if (e.code !== 'ERR_ACCESS_DENIED' || typeof e.permission !== 'string' || e.permission === '') return message;
  const resource = typeof e.resource === 'string' && e.resource !== '' ? ` ${e.resource}` : '';
  const advice = PERMISSION_ADVICE[e.permission];
  return `${message} (${e.permission}${resource})${advice ? `: ${advice}` : ''}`;
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

/** What Node says of import, export or import.meta in a file it loads as CommonJS. */
const ESM_AS_COMMONJS = /^(Cannot use import statement outside a module|Unexpected token 'export'|Cannot use 'import\.meta' outside a module)/;

/**
 * One line saying why a user module did not load, with the location where one is known.
 * `commonJs`: the file loads as CommonJS (a .js file of a package that is not "type": "module").
 */
export function describeModuleError(err: unknown, file: string, commonJs = false): string {
  const lines = describeError(err)
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  // esbuild (through tsx): "Transform failed with 1 error:" then "<file>:<line>:<col>: ERROR: ...".
  if (/^Transform failed/.test(lines[0] ?? '') && lines[1]) return `syntax error: ${lines[1]}`;
  const first = lines[0] ?? 'unknown error';
  // A .js file with import or export in a "type": "commonjs" package (what `npm init -y` writes):
  // Node takes it as CommonJS, and says so as a syntax error (or, through tsx, a cycle).
  if (commonJs && /\.js$/.test(file) && (ESM_AS_COMMONJS.test(first) || /^Cannot require\(\) ES Module .* in a cycle/.test(first))) {
    return `${file} uses import, export or import.meta, but Node loads it as CommonJS (its package.json does not say "type": "module"): rename it .mjs, or set "type": "module"`;
  }
  // tsx's CommonJS path reports a TypeScript syntax error this way outside a "type": "module" package.
  if (/^Cannot require\(\) ES Module .* in a cycle/.test(first)) {
    return `${file} did not compile (tsx reported a require cycle, which is how it reports a syntax error outside a "type": "module" package; check the file's syntax, or rename it .mts)`;
  }
  if (err instanceof SyntaxError && /\.(c|m)?js$/.test(file)) {
    return `syntax error in ${file}: ${first} (\`node --check ${file}\` shows the line)`;
  }
  return first;
}
