/**
 * The authoring helpers. Each is a typed identity function: a plain object of the same shape
 * works just as well. `check` builds the checks a verifier returns.
 */
import { isDeepStrictEqual } from 'node:util';
import type { FromSchema } from './schema-types.js';
import type { Check, Environment, JsonSchema, Task, Tool, WorldContext } from './types.js';

/** Defines a tool; with `inputSchema` written `as const`, `input` is typed from it. */
export function defineTool<State = any, const S extends JsonSchema = JsonSchema, Output = unknown>(tool: {
  name: string;
  description: string;
  inputSchema: S;
  readOnly?: boolean;
  run(state: State, input: FromSchema<S>, ctx: WorldContext): Output | Promise<Output>;
}): Tool<State, FromSchema<S>, Output> {
  return tool;
}

/** Defines an environment: a world factory and the tools that act on it. */
export function defineEnvironment<State>(environment: Environment<State>): Environment<State> {
  return environment;
}

/** Defines a task: an instruction, an environment, and a verifier. */
export function defineTask<State>(task: Task<State>): Task<State> {
  return task;
}

/** Builders for the checks a verifier returns. */
export const check = {
  /** Passes when `actual` deep-equals `expected`. */
  equal(name: string, actual: unknown, expected: unknown, message?: string): Check {
    return withMessage({ name, pass: isDeepStrictEqual(actual, expected), expected, actual }, message);
  },
  /** Passes when `cond` is truthy. */
  ok(name: string, cond: unknown, message?: string): Check {
    return withMessage({ name, pass: Boolean(cond) }, message);
  },
  /** Passes when the output contains `expected` (case-insensitive). */
  contains(name: string, output: string | null, expected: string | number, message?: string): Check {
    const needle = String(expected).toLowerCase();
    const pass = output !== null && output.toLowerCase().includes(needle);
    return withMessage({ name, pass, expected: `contains ${JSON.stringify(String(expected))}`, actual: output }, message);
  },
  /**
   * Passes when the output states `expected` as a number of its own: "4" matches "There are 4."
   * but not "14" or "2024". Thousands separators are ignored.
   */
  number(name: string, output: string | null, expected: number, message?: string): Check {
    const numbers = (output ?? '').replace(/(\d),(?=\d{3}\b)/g, '$1').match(/-?\d+(?:\.\d+)?/g) ?? [];
    const pass = numbers.some((n) => Number(n) === expected);
    return withMessage({ name, pass, expected: `the number ${expected}`, actual: output }, message);
  },
  /** Passes when the trace has a successful call to `toolName` (optionally matching `where`). */
  called(
    name: string,
    trace: readonly { type: string; name?: string; input?: unknown; callId?: number; ok?: boolean }[],
    toolName: string,
    where?: (input: any) => boolean,
  ): Check {
    const okIds = new Set(trace.filter((e) => e.type === 'tool_result' && e.ok).map((e) => e.callId));
    const pass = trace.some(
      (e) => e.type === 'tool_call' && e.name === toolName && okIds.has(e.callId) && (where ? where(e.input) : true),
    );
    return { name, pass, expected: `a successful call to ${toolName}` };
  },
  /**
   * Passes when a message of the agent's in the conversation contains `text`, as tau-bench's output
   * check reads an answer: case-insensitive, commas removed from the message (and from `text`, so
   * that "1,234" and "1234" look for the same thing).
   */
  said(name: string, conversation: readonly { role: string; text: string }[] | undefined, text: string | number, message?: string): Check {
    const needle = String(text).toLowerCase().replaceAll(',', '');
    const said = (conversation ?? []).filter((m) => m.role === 'agent').map((m) => m.text);
    const pass = said.some((m) => m.toLowerCase().replaceAll(',', '').includes(needle));
    const actual = said.length === 0 ? 'the agent said nothing to the user' : `${said.length} message${said.length === 1 ? '' : 's'}, the last: ${JSON.stringify(said.at(-1))}`;
    return withMessage({ name, pass, expected: `${SAID_EXPECTED}${JSON.stringify(String(text))} (case-insensitive, commas ignored)`, actual }, message);
  },
};

/** How a `check.said` check's `expected` begins: the diagnosis tells what the agent said from the world by it. */
export const SAID_EXPECTED = 'an agent message contains ';

function withMessage(c: Check, message: string | undefined): Check {
  return message === undefined ? c : { ...c, message };
}
