/**
 * Validation of tool inputs against each tool's inputSchema, compiled once per tool. A schema
 * that does not say whether extra properties are allowed is closed at its top level, so a
 * hallucinated parameter is refused before `run`, with a message an agent can act on.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { SiloError } from '../errors.js';
import type { JsonSchema, Tool } from '../types.js';
import { suggest } from './similar.js';

// ajv-formats is CommonJS; its default export arrives wrapped under NodeNext.
const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;

const ajv = new Ajv({ allErrors: true, strict: false });
addFormats(ajv);

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
  try {
    entry = { validate: ajv.compile(schema), schema };
  } catch (err) {
    throw new SiloError(
      'SILO_SCHEMA_INVALID',
      `tool ${tool.name} of environment ${environmentName} has an invalid inputSchema: ${(err as Error).message}`,
    );
  }
  compiled.set(tool, entry);
  return entry;
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
