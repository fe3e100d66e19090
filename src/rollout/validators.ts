/**
 * The validators of tool inputs, made by ajv once per schema and kept as code for later commands.
 *
 * Loading ajv and compiling a tool's schema was ~15–20 ms of every cold command that loads a task
 * file (ajv is a third of the code such a command reads). The code ajv generates for a schema
 * (its "standalone" form) is written to the private folder (pool/private-folder.ts), named by a
 * hash of the schema's JSON and ajv's and Silo's versions; a later command that meets the same
 * schema runs that code and never loads ajv. The code needs only ajv's small runtime helpers.
 *
 * ajv is loaded when a schema is met that has no code yet: by `import()` where the caller can
 * wait (prepareValidators: task files, rollouts), or synchronously otherwise, from the package's
 * dependencies (a task built in memory and used without a rollout).
 */
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { ValidateFunction } from 'ajv';
import equalModule from 'ajv/dist/runtime/equal.js';
import ucs2lengthModule from 'ajv/dist/runtime/ucs2length.js';
import { SILO_VERSION } from '../paths.js';
import { privateSubfolder, writeAtomically } from '../pool/private-folder.js';
import { AJV_VERSION } from './meta-schema.js';

/** What compiles schemas: one ajv, with the options validation has always had. */
interface Compiler {
  compile(schema: object): ValidateFunction;
  /** The validator as a CommonJS module's code (ajv's standalone code). */
  code(validate: ValidateFunction): string;
}

let compiler: Compiler | undefined;
let loading: Promise<void> | undefined;

/** A CommonJS module as imported: its exports, or an ES module namespace with them as default. */
type Imported = { default?: unknown } & Record<string, unknown>;

/** The function a CommonJS package exports, however it was imported (`module.exports` or `.default`). */
function exported<T>(mod: unknown, name?: string): T {
  const m = mod as Imported;
  if (name !== undefined && typeof m[name] === 'function') return m[name] as T;
  if (typeof m === 'function') return m as T;
  const inner = m.default as Imported | undefined;
  if (name !== undefined && inner && typeof inner[name] === 'function') return inner[name] as T;
  return (typeof inner === 'function' ? inner : (inner?.default ?? inner)) as T;
}

function makeCompiler(ajvModule: unknown, formatsModule: unknown, standaloneModule: unknown): Compiler {
  const Ajv = exported<typeof import('ajv').Ajv>(ajvModule, 'Ajv');
  const addFormats = exported<(ajv: InstanceType<typeof Ajv>) => unknown>(formatsModule);
  const standalone = exported<(ajv: InstanceType<typeof Ajv>, validate: ValidateFunction) => string>(standaloneModule);
  // Schemas are checked against the meta-schema by its saved validator (meta-schema.ts) before they
  // get here, not by ajv, which would compile the meta-schema first (~30 ms).
  const ajv = new Ajv({ allErrors: true, strict: false, validateSchema: false, code: { source: true } });
  addFormats(ajv);
  return { compile: (schema) => ajv.compile(schema), code: (validate) => standalone(ajv, validate) };
}

/** Loads ajv, unless it is loaded or not needed. */
function loadCompiler(): Promise<void> {
  loading ??= Promise.all([import('ajv'), import('ajv-formats'), import('ajv/dist/standalone/index.js')]).then(([a, f, s]) => {
    compiler ??= makeCompiler(a, f, s);
  });
  return loading;
}

/** The compiler now: loaded already, or required from the package's dependencies. */
function compilerNow(): Compiler {
  if (!compiler) {
    const require = createRequire(import.meta.url);
    compiler = makeCompiler(require('ajv'), require('ajv-formats'), require('ajv/dist/standalone/index.js'));
  }
  return compiler;
}

/** ajv's runtime helpers, as the code of a validator requires them. */
const HELPERS = new Map<string, unknown>([
  ['ajv/dist/runtime/equal', { default: exported(equalModule) }],
  ['ajv/dist/runtime/ucs2length', { default: exported(ucs2lengthModule) }],
]);

/** The other modules a validator's code may require: the rest of ajv's runtime, and the formats. */
const REQUIRABLE = /^(ajv\/dist\/runtime\/[a-z0-9_]+|ajv-formats\/dist\/formats)$/;

function requireHelper(name: string): unknown {
  const known = HELPERS.get(name);
  if (known !== undefined) return known;
  if (!REQUIRABLE.test(name)) throw new Error(`a validator's code requires ${name}`);
  const mod: unknown = createRequire(import.meta.url)(name);
  HELPERS.set(name, mod);
  return mod;
}

/** Runs a validator's code (what ajv's standalone mode wrote) and returns the validator. */
function fromCode(code: string): ValidateFunction {
  const module = { exports: {} as unknown };
  // (ajv's own code, run as ajv runs it: new Function)
  new Function('module', 'exports', 'require', code)(module, module.exports, requireHelper);
  if (typeof module.exports !== 'function') throw new Error('not a validator');
  return module.exports as ValidateFunction;
}

/** Validators of this process, by the schema's JSON. */
const made = new Map<string, ValidateFunction>();

/** Where the code of the validator of this schema (as JSON) is kept, or undefined without a private folder. */
export function codeFile(json: string): string | undefined {
  let dir: string;
  try {
    dir = privateSubfolder('validators');
  } catch {
    return undefined; // not private: nothing kept, nothing run from it
  }
  const key = createHash('sha256').update(`${AJV_VERSION}\u0000${SILO_VERSION}\u0000${json}`).digest('hex').slice(0, 32);
  return join(dir, `validator-${key}.cjs`);
}

/** The validator kept for this schema, if any (and loadable). */
function kept(json: string): ValidateFunction | undefined {
  const file = codeFile(json);
  if (file === undefined) return undefined;
  try {
    return fromCode(readFileSync(file, 'utf8'));
  } catch {
    return undefined; // none yet, or not usable: compiled (and written) again
  }
}

/** Keeps a validator's code (best effort: without it, the next command compiles again). */
function keep(json: string, validate: ValidateFunction): void {
  const file = codeFile(json);
  if (file === undefined) return;
  try {
    const code = compilerNow().code(validate);
    // Code that needs more than ajv's runtime (none known) is not kept.
    for (const [, name] of code.matchAll(/require\("([^"]*)"\)/g)) if (!HELPERS.has(name!) && !REQUIRABLE.test(name!)) return;
    writeAtomically(file, code);
  } catch {
    // not kept
  }
}

/**
 * Whether a schema stands alone, so that its JSON says all of what its validator does: no `$id`
 * (another schema may `$ref` it, which ajv finds only among the schemas it compiled), no `$ref`
 * outside itself, and no number JSON cannot write (Infinity and NaN would both read `null`).
 * A schema that does not is compiled by ajv every time, as before.
 */
function standsAlone(value: unknown): boolean {
  if (typeof value === 'number') return Number.isFinite(value);
  if (typeof value !== 'object' || value === null) return true;
  if (Array.isArray(value)) return value.every(standsAlone);
  for (const [key, inner] of Object.entries(value)) {
    if (key === '$id') return false;
    if (key === '$ref' && (typeof inner !== 'string' || !inner.startsWith('#'))) return false;
    if (!standsAlone(inner)) return false;
  }
  return true;
}

/** Whether the validator of this schema (and its JSON) is ready without ajv: made here, or kept. */
export function validatorReady(schema: object, json: string): boolean {
  if (!standsAlone(schema)) return false;
  if (made.has(json)) return true;
  const found = kept(json);
  if (found) made.set(json, found);
  return found !== undefined;
}

/** Loads ajv now if a schema is to be compiled soon (see validatorReady). */
export function compilerNeeded(): Promise<void> | undefined {
  return compiler ? undefined : loadCompiler();
}

/**
 * The validator of a schema (already checked against the meta-schema), given as an object and as
 * its JSON: made before, kept, or compiled now (ajv's errors are thrown: a schema it cannot
 * compile, an unresolvable `$ref` say).
 */
export function validatorOf(schema: object, json: string): ValidateFunction {
  if (!standsAlone(schema)) return compilerNow().compile(schema);
  let validate = made.get(json) ?? kept(json);
  if (!validate) {
    validate = compilerNow().compile(schema);
    keep(json, validate);
  }
  made.set(json, validate);
  return validate;
}
