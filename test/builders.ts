/** One-line builders for the tools, environments and tasks that unit tests need. */
import type { Check, Environment, JsonSchema, Task, Tool } from '../src/types.js';

/** A tool with a schema and a run function (a no-op returning null by default). */
export function tool(name: string, inputSchema: JsonSchema, run: Tool['run'] = () => null): Tool {
  return { name, description: `the ${name} tool`, inputSchema, run };
}

/** An environment over a fresh copy of `seed` on every createState call. */
export function environment<State extends object>(seed: State, tools: Tool<State>[] = [], name = 'test-env'): Environment<State> {
  return { name, createState: () => structuredClone(seed), tools };
}

/** A task in a tiny environment whose verifier returns `checks`. */
export function task(verify: Task['verify'], extra: Partial<Task> = {}): Task {
  return {
    id: 'test/task',
    environment: environment({ count: 0 }),
    instruction: 'do the thing',
    verify,
    ...extra,
  };
}

/** A passing check, for verifiers that only need to return something valid. */
export const passing = (name = 'ok'): Check => ({ name, pass: true });
