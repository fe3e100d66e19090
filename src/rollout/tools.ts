/**
 * Step 3: bind the tools to the live world. A bound toolbox runs the part of the tool-call path
 * that touches the world: lookup → validation → run → clone. Every failure is a ToolResult.
 */
import { describeError } from '../errors.js';
import { copyForWorker } from '../pool/views.js';
import type { Environment, Tool, ToolInputSchema, ToolResult, ToolSchema, WorldContext } from '../types.js';
import { compileTool, validateInput } from './validate.js';
import { nearestFirst } from './similar.js';
import type { WriteTracker } from './track.js';

export interface Toolbox {
  /** The schemas an agent receives: name, description and the schema as enforced. */
  readonly schemas: ToolSchema[];
  /** The world's write tracker, if it has one. */
  readonly tracker: WriteTracker | null;
  /**
   * Lookup, validation, run and clone. Never throws. The result comes at once when the tool's
   * `run` returned a value, as a promise when it returned one (or any thenable).
   */
  call(name: string, input: unknown): ToolResult | Promise<ToolResult>;
}

/** The schemas an agent of this environment receives (also what `silo tools` prints). */
export function toolSchemas(environment: Environment): ToolSchema[] {
  return environment.tools.map((tool) => ({
    name: tool.name,
    description: tool.description,
    // Filled in by effectiveSchema where the schema is an object schema (every tool's input is an object).
    inputSchema: compileTool(tool, environment.name).schema as ToolInputSchema,
  }));
}

/**
 * Binds an environment's tools to a live world (`state`: the tracker's view when there is a
 * tracker, whose proxies the returned values are read through).
 */
export function bindTools<State>(environment: Environment<State>, state: State, ctx: WorldContext, tracker: WriteTracker | null = null): Toolbox {
  const byName = new Map<string, Tool<State>>(environment.tools.map((t) => [t.name, t]));
  const names = [...byName.keys()];
  return {
    schemas: toolSchemas(environment),
    tracker,
    call(name, input) {
      const tool = byName.get(name);
      if (!tool) {
        const nearest = nearestFirst(name, names);
        return fail('tool_not_found', `no tool named '${name}'. Available tools, nearest first: ${nearest.join(', ')}`, {
          available: nearest,
        });
      }
      const invalid = validateInput(tool, environment.name, input);
      if (invalid) {
        return fail('invalid_input', invalid.message, { issues: invalid.issues, parameters: invalid.parameters });
      }
      let value: unknown;
      try {
        value = tool.run(state, input, ctx);
      } catch (err) {
        return failed(name, err);
      }
      // Most tools answer at once: their result is sent without a turn of the event loop.
      // A promise, or any thenable, is awaited as before.
      if (isThenable(value)) {
        return Promise.resolve(value).then(
          (settled) => copied(name, settled),
          (err: unknown) => failed(name, err),
        );
      }
      return copied(name, value);
    },
  };
}

/** Whether `value` is to be awaited (what `await` would adopt: anything with a callable `then`). */
function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

function failed(name: string, err: unknown): ToolResult {
  return fail('tool_error', err instanceof Error ? describeError(err) : `${name} failed: ${describeError(err)}`);
}

/** A tool's value as the agent gets it. */
function copied(name: string, value: unknown): ToolResult {
  try {
    // The agent gets a copy: nothing it does with the value can reach back into the world
    // (world objects in it are tracking proxies, which structuredClone copies through), and a
    // typed array in it brings its own bytes only, not the rest of its buffer (a small Buffer
    // is a slice of Node's shared pool). A string, number, boolean or bigint is its own copy;
    // a function or a symbol is refused.
    return { ok: true, value: value === undefined ? null : typeof value === 'object' || typeof value === 'function' || typeof value === 'symbol' ? copyForWorker(value) : value };
  } catch (err) {
    return fail('tool_error', `${name} returned a value that cannot be cloned (${describeError(err)}); tools must return plain data`);
  }
}

function fail(code: Extract<ToolResult, { ok: false }>['error']['code'], message: string, details?: object): ToolResult {
  return { ok: false, error: { code, message, ...details } };
}
