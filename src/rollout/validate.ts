/**
 * Validation of tool inputs against each tool's inputSchema, compiled once per tool. A schema
 * that does not say whether extra properties are allowed is closed at its top level, so a
 * hallucinated parameter is refused before `run`, with a message an agent can act on.
 */
import type { ErrorObject, ValidateFunction } from 'ajv';
import { SiloError } from '../errors.js';
import type { JsonSchema, Tool } from '../types.js';
import validateMetaSchema from './meta-schema.js';
import { suggest } from './similar.js';
import { compilerNeeded, validatorOf, validatorReady } from './validators.js';

/** The saved validator of the draft-07 meta-schema: true, or false with its errors. */
const checkSchema = validateMetaSchema as unknown as ((schema: unknown) => boolean) & { errors?: ErrorObject[] | null };

/** What an invalid input is reported as. */
export interface InvalidInput {
  message: string;
  issues: { path: string; problem: string }[];
  parameters: string[];
}

interface Compiled {
  validate: ValidateFunction;
  schema: JsonSchema;
}

const compiled = new WeakMap<Tool, Compiled>();

/**
 * The schema as enforced (and as shown to agents): closed at the top unless it says otherwise, and
 * an object schema written out in full (`type`, `properties`, `required`: what agent frameworks
 * expect to find, and what changes nothing in validation).
 */
export function effectiveSchema(schema: JsonSchema): JsonSchema {
  const open =
    'additionalProperties' in schema ||
    'unevaluatedProperties' in schema ||
    'patternProperties' in schema ||
    'allOf' in schema ||
    'anyOf' in schema ||
    'oneOf' in schema ||
    '$ref' in schema;
  const isObject = schema.type === 'object' || (schema.type === undefined && 'properties' in schema);
  if (!isObject) return schema;
  return {
    ...schema,
    type: 'object',
    properties: schema.properties ?? {},
    required: schema.required ?? [],
    ...(open ? {} : { additionalProperties: false }),
  };
}

/** Compiles (once) the validator of a tool; a broken schema is a SiloError naming the tool. */
export function compileTool(tool: Tool, environmentName: string): Compiled {
  let entry = compiled.get(tool);
  if (entry) return entry;
  const raw = tool.inputSchema;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) {
    throw new SiloError('SILO_SCHEMA_INVALID', `tool ${tool.name} of environment ${environmentName} needs an inputSchema object (a JSON Schema)`);
  }
  const schema = effectiveSchema(raw);
  const invalid = checkSchema(schema) ? undefined : schemaProblem(raw, checkSchema.errors ?? []);
  if (invalid !== undefined) {
    throw new SiloError('SILO_SCHEMA_INVALID', `tool ${tool.name} of environment ${environmentName} has an invalid inputSchema: ${invalid}`);
  }
  try {
    entry = { validate: validatorOf(schema, JSON.stringify(schema)), schema };
  } catch (err) {
    throw new SiloError(
      'SILO_SCHEMA_INVALID',
      `tool ${tool.name} of environment ${environmentName} has an invalid inputSchema: ${(err as Error).message}`,
    );
  }
  compiled.set(tool, entry);
  return entry;
}

/**
 * Makes ready, before their first use, the validators of these tools (anything: a task file's
 * exports, unchecked): those kept by an earlier command are loaded, and ajv is loaded by
 * `import()` when one is not (compileTool then compiles it without loading ajv synchronously).
 * Undefined when there is nothing to wait for.
 */
export function prepareValidators(tools: readonly unknown[]): Promise<void> | undefined {
  let needed = false;
  for (const tool of tools) {
    if (typeof tool !== 'object' || tool === null || compiled.has(tool as Tool)) continue;
    const raw = (tool as Partial<Tool>).inputSchema;
    if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) continue;
    const schema = effectiveSchema(raw);
    // (a schema the meta-schema refuses is never compiled: compileTool says what is wrong)
    if (checkSchema(schema) && !validatorReady(schema, JSON.stringify(schema))) needed = true;
  }
  return needed ? compilerNeeded() : undefined;
}

/**
 * ajv's complaints about a schema (checked against the JSON Schema meta-schema) as one sentence
 * that names the path and the value: `inputSchema.type is 'objekt'; expected one of array,
 * boolean, ...`, rather than one line per branch of the meta-schema that did not match.
 */
export function schemaProblem(schema: unknown, errors: readonly ErrorObject[]): string {
  if (errors.length === 0) return 'ajv refused it';
  // The first place ajv complained about, and everything it said about that place.
  const path = errors[0]!.instancePath;
  const here = errors.filter((e) => e.instancePath === path);
  const places = new Set(errors.map((e) => e.instancePath)).size;
  const segments = path.split('/').slice(1).map(unescapePointer);
  const where = ['inputSchema', ...segments].join('.');
  const value = segments.reduce<unknown>((node, key) => (node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[key] : undefined), schema);
  const is = `${where} is ${showValue(value)}`;
  const params = (e: ErrorObject) => e.params as Record<string, unknown>;
  const enumError = here.find((e) => e.keyword === 'enum');
  const typeErrors = here.filter((e) => e.keyword === 'type').map((e) => String(params(e).type));
  let sentence: string;
  if (enumError) {
    // JSON's types in the order people reach for them, not the meta-schema's alphabetical one.
    const allowed = (params(enumError).allowedValues as unknown[])
      .map((v) => (typeof v === 'string' ? v : JSON.stringify(v)))
      .sort((a, b) => typeRank(a) - typeRank(b));
    sentence = `${is}; expected one of ${allowed.join(', ')}${typeErrors.length > 0 ? ` (or ${typeErrors.map((t) => (t === 'array' ? 'an array of them' : `a${/^[aeiou]/.test(t) ? 'n' : ''} ${t}`)).join(' or ')})` : ''}`;
  } else if (typeErrors.length > 0) {
    sentence = `${is}; expected ${typeErrors.map((t) => `a${/^[aeiou]/.test(t) ? 'n' : ''} ${t}`).join(' or ')}`;
  } else {
    const first = here.find((e) => e.keyword !== 'anyOf' && e.keyword !== 'oneOf') ?? here[0]!;
    sentence = `${is}; it ${first.message ?? 'is not valid JSON Schema'}`;
  }
  return places > 1 ? `${sentence} (and ${places - 1} more problem${places > 2 ? 's' : ''})` : sentence;
}

const TYPE_ORDER = ['object', 'array', 'string', 'number', 'integer', 'boolean', 'null'];

function typeRank(name: string): number {
  const i = TYPE_ORDER.indexOf(name);
  return i < 0 ? TYPE_ORDER.length : i;
}

function showValue(value: unknown): string {
  if (value === undefined) return 'missing';
  const text = typeof value === 'string' ? `'${value}'` : (JSON.stringify(value) ?? String(value));
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}

/** Validates an input; returns null when valid. */
export function validateInput(tool: Tool, environmentName: string, input: unknown): InvalidInput | null {
  const { validate, schema } = compileTool(tool, environmentName);
  if (validate(input)) return null;
  return describeErrors(tool.name, schema, validate.errors ?? []);
}

function describeErrors(toolName: string, schema: JsonSchema, errors: ErrorObject[]): InvalidInput {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required ?? []) as string[]);
  const names = Object.keys(properties);
  const parameters = names.map((name) => {
    const type = properties[name]?.type;
    const typeText = Array.isArray(type) ? type.join('|') : typeof type === 'string' ? type : 'any';
    return `${name} (${typeText}${required.has(name) ? ', required' : ''})`;
  });
  const seen = new Set<string>();
  const issues: InvalidInput['issues'] = [];
  for (const e of errors) {
    const issue = describeError(e, names);
    const key = `${issue.path}\u0000${issue.problem}`;
    if (seen.has(key)) continue;
    seen.add(key);
    issues.push(issue);
  }
  const list = issues.map((i) => i.problem).join('; ');
  const params = parameters.length > 0 ? `${toolName} takes: ${parameters.join(', ')}` : `${toolName} takes no parameters`;
  return { message: `invalid input for ${toolName}: ${list}. ${params}.`, issues, parameters: names };
}

function describeError(e: ErrorObject, topNames: string[]): { path: string; problem: string } {
  const path = e.instancePath.split('/').slice(1).map(unescapePointer).join('.');
  const where = path === '' ? 'input' : `'${path}'`;
  const params = e.params as Record<string, unknown>;
  switch (e.keyword) {
    case 'additionalProperties': {
      const prop = String(params.additionalProperty);
      const full = path === '' ? prop : `${path}.${prop}`;
      // Nearest-name hints are only for the top level, where the parameter list is known.
      const hint = path === '' ? suggest(prop, topNames) : undefined;
      const mean = hint === undefined ? '' : ` (did you mean '${hint}'?)`;
      return { path: full, problem: `unknown parameter '${full}'${mean}` };
    }
    case 'required': {
      const prop = String(params.missingProperty);
      const full = path === '' ? prop : `${path}.${prop}`;
      return { path: full, problem: `missing required parameter '${full}'` };
    }
    case 'type':
      return { path, problem: `${where} must be ${String(params.type)}` };
    case 'enum':
      return { path, problem: `${where} must be one of ${JSON.stringify(params.allowedValues)}` };
    case 'const':
      return { path, problem: `${where} must be ${JSON.stringify(params.allowedValue)}` };
    default:
      return { path, problem: `${where} ${e.message ?? 'is invalid'}` };
  }
}

function unescapePointer(segment: string): string {
  return segment.replace(/~1/g, '/').replace(/~0/g, '~');
}
