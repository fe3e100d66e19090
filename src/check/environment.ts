/**
 * The checks of one environment: createState returns a fresh world that shares no object with
 * the previous one, the same seed gives the same world, and every tool has a unique name, a
 * description and an inputSchema that ajv's strict mode accepts.
 */
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { describeError } from '../errors.js';
import { CREATE_STATE_TIMEOUT_MS } from '../options.js';
import { createContext } from '../rollout/state.js';
import { effectiveSchema } from '../rollout/validate.js';
import { TIMED_OUT, within } from '../time.js';
import type { Environment, WorldContext } from '../types.js';
import type { CheckName, Finding, FindingCode } from './types.js';
import { findAliasedObjects, findDifferences, findSharedObjects, formatPath, type Found, type SharedObject } from './walk.js';

// ajv-formats is CommonJS; its default export arrives wrapped under NodeNext.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

/** What checkEnvironment found, and whether rollouts of the environment can be built at all. */
export interface EnvironmentResult {
  findings: Finding[];
  /** False when no rollout could start (createState fails, or hands out one object): its tasks are not run. */
  usable: boolean;
  /** createState returned two worlds, so the determinism check ran. */
  compared: boolean;
  /** Two worlds of one seed came out deep-equal and shared no object. */
  reliable: boolean;
}

/** A world could not be built; the message says why. */
export class WorldBuildError extends Error {}

/** createState with a fresh context for `seed`, bounded in time; throws WorldBuildError. */
export async function createWorld<State>(environment: Environment<State>, seed: number): Promise<{ state: State; ctx: WorldContext }> {
  let ctx: WorldContext;
  let state: State | typeof TIMED_OUT;
  try {
    ctx = createContext(seed, environment.clockStart);
    state = await within(Promise.resolve().then(() => environment.createState(ctx)), CREATE_STATE_TIMEOUT_MS);
  } catch (err) {
    throw new WorldBuildError(`${environment.name}.createState() threw: ${describeError(err)}`);
  }
  if (state === TIMED_OUT) throw new WorldBuildError(`${environment.name}.createState() did not finish within ${CREATE_STATE_TIMEOUT_MS} ms`);
  if (typeof state !== 'object' || state === null) {
    throw new WorldBuildError(`${environment.name}.createState() must return an object (got ${state === null ? 'null' : typeof state})`);
  }
  return { state, ctx };
}

/** Runs the environment checks. `tasks` is how many tasks use it (for the messages). */
export async function checkEnvironment(environment: Environment, seed: number, tasks: number): Promise<EnvironmentResult> {
  const name = environment.name;
  const findings: Finding[] = [];
  const add = (check: CheckName, code: FindingCode, message: string): void => {
    findings.push({ check, code, message, environment: name });
  };
  const notRun = `; its ${tasks} task${tasks === 1 ? ' was' : 's were'} not run`;
  findings.push(...checkTools(environment));

  let first: unknown;
  let second: unknown;
  try {
    first = (await createWorld(environment, seed)).state;
    second = (await createWorld(environment, seed)).state;
  } catch (err) {
    add('fresh_state', 'create_state_failed', `${describeError(err)}${notRun}`);
    return { findings, usable: false, compared: false, reliable: false };
  }

  if (first === second) {
    add(
      'fresh_state',
      'shared_state',
      `${name}.createState() returned the same object twice, so one rollout would see another's changes: return a new world on every call, e.g. \`createState: () => structuredClone(seed)\`${notRun}`,
    );
    return { findings, usable: false, compared: true, reliable: false };
  }
  let usable = true;
  const shared = findSharedObjects(first, second);
  if (shared.total > 0) add('fresh_state', 'shared_state', sharedMessage(name, shared));
  try {
    structuredClone(first);
  } catch (err) {
    add(
      'fresh_state',
      'uncloneable_state',
      `the world built by ${name}.createState() cannot be copied with structuredClone (${describeError(err)}): keep the world to plain data${notRun}`,
    );
    usable = false;
  }
  const aliased = findAliasedObjects(first);
  if (aliased.total > 0) {
    const shown = aliased.first.map((a) => `${formatPath(a.path)} is ${formatPath(a.firstPath)}`);
    add(
      'fresh_state',
      'aliased_state',
      `one world holds the same object at two paths (${listed(shown, aliased.total)}): a change through one path shows at the other; keep one copy and refer to it by id`,
    );
  }

  const differences = findDifferences(first, second);
  if (differences.total > 0) {
    const shown = differences.first.map((d) => `${formatPath(d.path)} (${preview(d.first)} vs ${preview(d.second)})`);
    add(
      'deterministic_state',
      'nondeterministic_state',
      `${name}.createState() is not deterministic for a seed: two worlds built with seed ${seed} differ at ${listed(shown, differences.total)}; draw from ctx.random() and ctx.now(), never Math.random() or Date.now()`,
    );
  }
  return { findings, usable, compared: true, reliable: usable && shared.total === 0 && differences.total === 0 };
}

function sharedMessage(name: string, shared: Found<SharedObject>): string {
  const shown = shared.first.map((s) => {
    const path = formatPath(s.path);
    const inFirst = formatPath(s.pathInFirst);
    return path === inFirst ? path : `${path} (${inFirst} in the other world)`;
  });
  const subject = shared.total === 1 ? `${shown[0]} is the same object` : `${listed(shown, shared.total)} are the same objects`;
  return `${subject} in two worlds: ${name}.createState() must return a deep copy (structuredClone), or one rollout's changes reach the next`;
}

/** Duplicate names, missing descriptions, and schemas that ajv's strict mode refuses. */
function checkTools(environment: Environment): Finding[] {
  const findings: Finding[] = [];
  const add = (code: FindingCode, message: string): void => {
    findings.push({ check: 'tool_schemas', code, message, environment: environment.name });
  };
  const seen = new Set<string>();
  for (const tool of environment.tools) {
    if (seen.has(tool.name)) add('duplicate_tool_name', `two tools are named ${tool.name}; tool names must be unique`);
    seen.add(tool.name);
    if (typeof tool.description !== 'string' || tool.description.trim() === '') {
      add('missing_description', `tool ${tool.name} has no description; agents choose tools by their descriptions`);
    }
    const problem = strictProblem(tool.inputSchema);
    if (problem !== null) add('schema_not_strict', `tool ${tool.name}: ${problem}`);
  }
  return findings;
}

/** Why ajv's strict mode refuses a schema (as enforced: closed at the top), or null. */
export function strictProblem(schema: unknown): string | null {
  if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) return 'inputSchema must be an object (a JSON Schema)';
  // A fresh instance per schema: ids and refs of one tool cannot clash with another's. Union
  // types (`type: ['string', 'null']`) are valid JSON Schema that model APIs use, so they are allowed.
  const ajv = new Ajv({ strict: true, allErrors: true, allowUnionTypes: true, logger: false });
  addFormats(ajv);
  try {
    ajv.compile(effectiveSchema(schema as Record<string, unknown>));
    return null;
  } catch (err) {
    return `ajv strict mode refuses the inputSchema: ${describeError(err).replace(/^strict mode: /, '')}`;
  }
}

/** "a, b, c and 4 more" */
function listed(items: string[], total: number): string {
  const more = total - items.length;
  if (more > 0) return `${items.join(', ')} and ${more} more`;
  if (items.length <= 1) return items.join('');
  return `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}

function preview(value: unknown): string {
  if (value === undefined) return '(absent)';
  let text: string;
  try {
    text = typeof value === 'bigint' ? `${value}n` : (JSON.stringify(value) ?? String(value));
  } catch {
    text = String(value);
  }
  return text.length > 60 ? `${text.slice(0, 57)}...` : text;
}
