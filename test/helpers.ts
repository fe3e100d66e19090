/**
 * Test helpers: a tiny world with tools that show what they really received, built in one line,
 * and readers for a run folder's artifacts.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { check, defineEnvironment, defineTask, defineTool } from '../src/index.js';
import type { Check, Limits, ResultRecord, RunRecord, Task, Tool, TraceEvent, VerifyArgs } from '../src/index.js';

/** The world of a test environment. */
export interface TestState {
  /** What `record` received, in call order, with the kind of value the tool saw. */
  records: { value: unknown; kind: string }[];
  /** Written by `set_value`. */
  values: Record<string, unknown>;
  /** Deep-merged into by `merge`. */
  settings: Record<string, unknown>;
  /** How many times `increment` ran. */
  count: number;
}

/** `Object.prototype.toString` of a value: `[object Object]`, `[object Int32Array]`, ... */
function kindOf(value: unknown): string {
  return Object.prototype.toString.call(value);
}

/**
 * A deliberately careless deep merge, the kind that pollutes prototypes when the input holds
 * `__proto__` or `constructor.prototype` keys. It stands for a real tool written without care.
 */
function carelessMerge(target: Record<string, any>, source: Record<string, any>): void {
  for (const key of Object.keys(source)) {
    const value: unknown = source[key];
    if (typeof value === 'object' && value !== null) {
      if (!(key in target)) target[key] = {};
      carelessMerge(target[key], value as Record<string, any>);
    } else {
      target[key] = value;
    }
  }
}

/** The tools every test world has. */
export const baseTools: Tool<TestState>[] = [
  defineTool({
    name: 'record',
    description: 'Stores the value it receives, as received.',
    inputSchema: { type: 'object', properties: { value: {} }, required: ['value'] } as const,
    run(state: TestState, input) {
      state.records.push({ value: input.value, kind: kindOf(input.value) });
      return { recorded: state.records.length };
    },
  }),
  defineTool({
    name: 'set_value',
    description: 'Sets values[key] = value; returns the previous value.',
    inputSchema: {
      type: 'object',
      properties: { key: { type: 'string' }, value: {} },
      required: ['key', 'value'],
    } as const,
    run(state: TestState, input) {
      const previous = state.values[input.key] ?? null;
      state.values[input.key] = input.value;
      return { previous };
    },
  }),
  defineTool({
    name: 'merge',
    description: 'Deep-merges `data` (an open object) into the settings.',
    inputSchema: { type: 'object', properties: { data: { type: 'object' } }, required: ['data'] } as const,
    run(state: TestState, input) {
      carelessMerge(state.settings, input.data as Record<string, any>);
      return state.settings;
    },
  }),
  defineTool({
    name: 'increment',
    description: 'Adds one to the counter; returns the new count.',
    inputSchema: { type: 'object', properties: {} } as const,
    run(state: TestState) {
      state.count += 1;
      return state.count;
    },
  }),
];

export interface TestWorldOptions {
  id?: string;
  instruction?: string;
  /** Tools added to the base tools. */
  tools?: Tool<TestState>[];
  /** The verifier; by default one check, "the agent gave an answer" (output not null). */
  verify?: (args: VerifyArgs<TestState>) => Check[] | Promise<Check[]>;
  limits?: Partial<Limits>;
}

/** A task in a fresh test environment, and what its verifier last saw. */
export interface TestWorld {
  task: Task<TestState>;
  /** The world as the verifier saw it (undefined until the verifier ran). */
  final: TestState | undefined;
  /** How many times the verifier ran. */
  verified: number;
}

/** Makes a test world in one line: `const world = testWorld({ tools: [myTool] })`. */
export function testWorld(options: TestWorldOptions = {}): TestWorld {
  const environment = defineEnvironment<TestState>({
    name: 'test-world',
    createState: () => ({ records: [], values: {}, settings: {}, count: 0 }),
    tools: [...baseTools, ...(options.tools ?? [])],
  });
  const world: TestWorld = {
    final: undefined,
    verified: 0,
    task: defineTask<TestState>({
      id: options.id ?? 'test/hostile',
      environment,
      instruction: options.instruction ?? 'Do your worst.',
      ...(options.limits ? { limits: options.limits } : {}),
      verify: (args) => {
        world.verified += 1;
        world.final = args.final;
        return options.verify ? options.verify(args) : [check.ok('the agent gave an answer', args.output !== null)];
      },
    }),
  };
  return world;
}

/** Every file of a run folder, parsed. Throws if one is missing or is not valid JSON. */
export interface RunFiles {
  run: RunRecord;
  result: ResultRecord;
  trace: TraceEvent[];
  diff: unknown[];
  /** The lines of models.jsonl (none when the run made no model call through the gateway). */
  models: any[];
}

export function readRunFiles(runDir: string): RunFiles {
  const json = (name: string): any => JSON.parse(readFileSync(join(runDir, name), 'utf8'));
  const trace = readFileSync(join(runDir, 'trace.jsonl'), 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => JSON.parse(line) as TraceEvent);
  const modelsFile = join(runDir, 'models.jsonl');
  const models = existsSync(modelsFile) ? readFileSync(modelsFile, 'utf8').split('\n').filter((line) => line !== '').map((line) => JSON.parse(line) as unknown) : [];
  return { run: json('run.json'), result: json('result.json'), trace, diff: json('state-diff.json'), models };
}

/** The events of one type, typed. */
export function eventsOf<T extends TraceEvent['type']>(trace: readonly TraceEvent[], type: T): Extract<TraceEvent, { type: T }>[] {
  return trace.filter((e): e is Extract<TraceEvent, { type: T }> => e.type === type);
}

/** A fresh temporary directory, and a function that removes it. */
export function tempDir(prefix: string): { dir: string; remove: () => void } {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A pid no process has: that of a process that just ended. */
export function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

/**
 * How many messages this process's Worker objects received from their threads' parent ports while
 * `fn` ran (Node emits a parent port's messages on the Worker).
 */
export async function parentPortMessagesDuring(fn: () => Promise<void>): Promise<number> {
  let received = 0;
  const emit = Worker.prototype.emit;
  Worker.prototype.emit = function (this: Worker, event: string | symbol, ...args: unknown[]) {
    if (event === 'message') received++;
    return emit.call(this, event, ...args);
  } as typeof emit;
  try {
    await fn();
  } finally {
    Worker.prototype.emit = emit;
  }
  return received;
}
