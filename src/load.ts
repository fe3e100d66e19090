/**
 * Loading task files in the host. A task module default-exports one task or an array of tasks;
 * `.js`, `.mjs` and `.ts` files load without a build step. Every problem is a SiloError saying
 * which file and what to fix. Agent modules are never loaded here: only inside their worker.
 */
import { userProblem } from './user/plan.js';
import { existsSync, statSync } from 'node:fs';
import { join, resolve, sep } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describeModuleError, SiloError, type SiloErrorCode } from './errors.js';
import { esModuleExports, isCommonJs, isTypeScript } from './typescript.js';
import { PACKAGE_ROOT } from './paths.js';
import { compileTool, prepareValidators } from './rollout/validate.js';
import type { Environment, Task } from './types.js';

/** A task and the file it came from. */
export interface LoadedTask {
  task: Task;
  file: string;
}

/**
 * Imports a user module; TypeScript is compiled (task-compile.ts), or goes through tsx where the
 * compiled module could not stand for it. The module reads the same whatever the
 * project's module type: in a `"type": "commonjs"` project a `.ts` file's `export default` is
 * compiled to `exports.default`, and importing it hands back `module.exports` as the default, one
 * level too deep; such a module (marked `__esModule`) is unwrapped to the exports it declared.
 */
export async function importUserModule(file: string): Promise<Record<string, unknown>> {
  const url = pathToFileURL(file).href;
  let mod: Record<string, unknown>;
  // (a private folder that is not private, say: tsx loads it, as before)
  const compiled = isTypeScript(file) ? await import('./task-compile.js').then(({ compileTaskFile }) => compileTaskFile(file)).catch(() => null) : null;
  if (compiled !== null) {
    // Stack traces name the TypeScript (the module's source map is inline), as under tsx.
    process.setSourceMapsEnabled(true);
    // A fresh instance each time, as tsx's namespaces gave.
    mod = (await import(`${pathToFileURL(compiled).href}?load=${++loads}`)) as Record<string, unknown>;
  } else if (isTypeScript(file)) {
    // What tsx's tsImport does (a namespace of its own per file, so a file loads afresh each
    // time; CommonJS's require hooked too, for a .ts file of a "type": "commonjs" project), with
    // Silo's own files kept out of the namespace (SHARED_SILO_HOOKS).
    const [{ register }, { register: registerRequire }, { randomUUID }, { default: Module }] = await Promise.all([
      import('tsx/esm/api'),
      import('tsx/cjs/api'),
      import('node:crypto'),
      import('node:module'),
    ]);
    const namespace = randomUUID();
    registerRequire({ namespace });
    shareSiloRequired(Module as unknown as Resolver);
    const scoped = register({ namespace });
    Module.register(SHARED_SILO_HOOKS, { data: pathToFileURL(OWN_FILES).href });
    mod = (await scoped.import(url, import.meta.url)) as Record<string, unknown>;
  } else {
    mod = (await import(url)) as Record<string, unknown>;
  }
  return esModuleExports(mod);
}

/** TypeScript task files loaded compiled so far (each load is a module of its own). */
let loads = 0;

/** Silo's own built files: what a task file imports of them is the command's own copy. */
const OWN_FILES = join(PACKAGE_ROOT, 'dist') + sep;

/**
 * Module hooks registered after tsx's for each TypeScript file (hooks registered later run first,
 * so these see the URLs tsx resolved). tsx marks every module a namespaced file imports as its
 * own (a `tsx-namespace` query), and a module loaded under another URL is another instance: a
 * task file's `import 'silo'` would load a second copy of Silo (a second SiloError class, a second
 * copy of each module's state, and the time to load it). Silo's own files (OWN_FILES, the data)
 * are resolved to the URLs the command loaded them under instead.
 */
const SHARED_SILO_HOOKS = `data:text/javascript,${encodeURIComponent(`let own;
export function initialize(data) { own = data; }
export async function resolve(specifier, context, next) {
  const resolved = await next(specifier, context);
  if (!resolved.url.startsWith(own) || !resolved.url.includes('tsx-namespace=')) return resolved;
  const url = new URL(resolved.url);
  url.searchParams.delete('tsx-namespace');
  return { ...resolved, url: url.href };
}`)}`;

interface Resolver {
  _resolveFilename: (this: unknown, ...args: unknown[]) => unknown;
}

/**
 * The same for `require('silo')` in a .ts file that is CommonJS (in a `"type": "commonjs"`
 * project): tsx's require hooks add a `?namespace=` to every file such a file requires, and would
 * compile Silo's chunks to CommonJS afresh. Wrapped around tsx's resolver, this hands back Silo's
 * own files without it: Node then loads them as the ES modules the command already loaded.
 */
function shareSiloRequired(Module: Resolver): void {
  const next = Module._resolveFilename;
  Module._resolveFilename = function (this: unknown, ...args: unknown[]): unknown {
    const resolved = next.apply(this, args);
    if (typeof resolved !== 'string' || !resolved.startsWith(OWN_FILES)) return resolved;
    const query = resolved.indexOf('?namespace=');
    return query === -1 ? resolved : resolved.slice(0, query);
  };
}

/** Loads every task of the given files, in order; ids must be unique across them. */
export async function loadTasks(paths: readonly string[]): Promise<LoadedTask[]> {
  const loaded: LoadedTask[] = [];
  const seen = new Map<string, string>();
  for (const p of paths) {
    const file = resolve(p);
    for (const task of await loadTaskFile(file)) {
      const other = seen.get(task.id);
      if (other !== undefined) {
        throw new SiloError('SILO_TASK_INVALID', `task id ${task.id} is used twice (${other} and ${file}); task ids must be unique`);
      }
      seen.set(task.id, file);
      loaded.push({ task, file });
    }
  }
  return loaded;
}

async function loadTaskFile(file: string): Promise<Task[]> {
  if (!existsSync(file)) throw new SiloError('SILO_TASK_FILE_NOT_FOUND', `task file not found: ${file}; pass the path of a module that default-exports a task or a list of them (\`silo init\` writes one)`);
  if (!statSync(file).isFile()) {
    throw new SiloError('SILO_TASK_FILE_NOT_FOUND', `${file} is a directory; \`silo run\` takes a task file (\`silo eval\` takes folders)`);
  }
  let mod: Record<string, unknown>;
  try {
    mod = await importUserModule(file);
  } catch (err) {
    throw new SiloError('SILO_TASK_LOAD_FAILED', `cannot load task file ${file}: ${describeModuleError(err, file, isCommonJs(file))}`, { cause: err });
  }
  const exported = mod.default;
  if (exported === undefined) {
    throw new SiloError('SILO_TASK_INVALID', `${file} has no default export; default-export a task or an array of tasks (defineTask)`);
  }
  const tasks = Array.isArray(exported) ? (exported as unknown[]) : [exported];
  if (tasks.length === 0) throw new SiloError('SILO_TASK_INVALID', `${file} exports an empty list of tasks`);
  // The validators of the tools: those kept by an earlier command, or ajv loaded to compile them.
  const validators = prepareValidators(tasks.flatMap((t) => toolsOf(t)));
  if (validators) await validators.catch(() => undefined); // (checkTask says what went wrong)
  return tasks.map((t, i) => checkTask(t, `${file}${Array.isArray(exported) ? ` [${i}]` : ''}`));
}

/** The tools of what a task file exported as a task, if it has any. */
function toolsOf(task: unknown): unknown[] {
  const tools = (task as Partial<Task> | null)?.environment?.tools;
  return Array.isArray(tools) ? tools : [];
}

function checkTask(value: unknown, where: string): Task {
  const t = value as Partial<Task> | null;
  const bad = (what: string, code: SiloErrorCode = 'SILO_TASK_INVALID'): never => {
    throw new SiloError(code, `task in ${where}${typeof t?.id === 'string' ? ` (${t.id})` : ''} ${what}`);
  };
  if (typeof t !== 'object' || t === null) bad('is not an object; use defineTask({ id, environment, instruction, verify })');
  if (typeof t!.id !== 'string' || t!.id === '') bad('needs an id (a non-empty string)');
  // A task with a user may leave its instruction out: run solo, the agent gets the user's brief.
  const briefOnly = t!.instruction === undefined && typeof (t!.user as { instruction?: unknown } | undefined)?.instruction === 'string';
  if (typeof t!.instruction !== 'string' && !briefOnly) bad('needs an instruction (a string), or a user with an instruction');
  if (typeof t!.verify !== 'function') bad('needs a verify function: ({ initial, final, output, trace }) => checks');
  if (t!.mayChange !== undefined && (!Array.isArray(t!.mayChange) || t!.mayChange.some((p) => typeof p !== 'string'))) {
    bad('has a mayChange that is not an array of path patterns');
  }
  const userBad = userProblem(t!.user);
  if (userBad) bad(userBad);
  if (t!.policy !== undefined && typeof t!.policy !== 'string') bad('has a policy that is not a string');
  checkEnvironment(t!.environment, bad);
  return briefOnly ? ({ ...t, instruction: t!.user!.instruction } as Task) : (t as Task);
}

function checkEnvironment(env: Environment | undefined, bad: (what: string, code?: SiloErrorCode) => never): void {
  if (typeof env !== 'object' || env === null) bad('needs an environment (import it and pass it in)');
  if (typeof env!.name !== 'string') bad('has an environment without a name');
  if (typeof env!.createState !== 'function') bad(`has environment ${env!.name} without a createState function`);
  if (!Array.isArray(env!.tools)) bad(`has environment ${env!.name} without a tools array`);
  const names = new Set<string>();
  for (const tool of env!.tools) {
    if (typeof tool?.name !== 'string' || typeof tool.run !== 'function') {
      bad(`has environment ${env!.name} with a tool that needs a name and a run function`);
    }
    if (names.has(tool.name)) bad(`has environment ${env!.name} with two tools named ${tool.name}; tool names must be unique`);
    names.add(tool.name);
    if (typeof tool.description !== 'string') bad(`has tool ${tool.name} without a description`);
    try {
      compileTool(tool, env!.name);
    } catch (err) {
      // compileTool names the tool; the file is only known here.
      if (err instanceof SiloError) bad(`cannot be used: ${err.message}`, err.code);
      throw err;
    }
  }
}
