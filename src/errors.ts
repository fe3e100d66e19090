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
  | 'SILO_RUN_NOT_FOUND'
  | 'SILO_ENVIRONMENT'
  | 'SILO_INTERNAL';

/** A harness or set-up failure with a stable code and a message that says what to do. */
export class SiloError extends Error {
  readonly code: SiloErrorCode;
  constructor(code: SiloErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SiloError';
    this.code = code;
  }
}

/** True for errors that are the user's to fix (exit code 2), as opposed to Silo bugs. */
export function isSetupError(err: unknown): err is SiloError {
  return err instanceof SiloError && err.code !== 'SILO_INTERNAL';
}

/** The data form of any thrown value: errors lose their class when they cross threads. */
export function toErrorInfo(err: unknown, code = 'error'): { code: string; message: string; stack?: string } {
  if (err instanceof Error) {
    const own = (err as { code?: unknown }).code;
    const c = typeof own === 'string' ? own : code;
    return err.stack ? { code: c, message: err.message, stack: err.stack } : { code: c, message: err.message };
  }
  let message: string;
  try {
    message = typeof err === 'string' ? err : JSON.stringify(err) ?? String(err);
  } catch {
    message = String(err);
  }
  return { code, message };
}
