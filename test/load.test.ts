import { afterAll, describe, it, expect } from 'vitest';
import { execFileSync, spawnSync } from 'node:child_process';
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { describeModuleError, SiloError, type SiloErrorCode } from '../src/errors.js';
import { loadTasks } from '../src/load.js';
import { tempDir } from './helpers.js';

const broken = (name: string) => resolve('fixtures/tasks/broken', name);

/** Loads, expects a SiloError with `code`, and returns its message (always one line). */
async function loadError(paths: string[], code: SiloErrorCode): Promise<string> {
  const err = await loadTasks(paths).then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(SiloError);
  expect((err as SiloError).code).toBe(code);
  const message = (err as SiloError).message;
  expect(message).not.toContain('\n');
  return message;
}

describe('loadTasks', () => {
  it('loads the six helpdesk tasks from a TypeScript file, each with its file', async () => {
    const loaded = await loadTasks(['fixtures/helpdesk/tasks.ts']);
    expect(loaded).toHaveLength(6);
    expect(new Set(loaded.map((l) => l.task.id)).size).toBe(6);
    expect(loaded.every((l) => l.file === resolve('fixtures/helpdesk/tasks.ts'))).toBe(true);
    expect(loaded.every((l) => l.task.environment.name === 'helpdesk')).toBe(true);
  });

  it('loads a plain .mjs task file written without the define helpers', async () => {
    const [loaded, ...rest] = await loadTasks(['fixtures/tasks/plain.tasks.mjs']);
    expect(rest).toEqual([]);
    expect(loaded!.task.id).toBe('plain/complete-todo');
    expect(loaded!.task.environment.tools.map((t) => t.name)).toEqual(['list_todos', 'complete_todo']);
    const state = (await loaded!.task.environment.createState({ random: () => 0, now: () => 0, advance: () => {}, seed: 0 })) as {
      todos: { done: boolean }[];
    };
    expect(state.todos[0]!.done).toBe(false);
  });

  it('loads several files in order', async () => {
    const loaded = await loadTasks(['fixtures/tasks/plain.tasks.mjs', 'fixtures/helpdesk/tasks.ts']);
    expect(loaded.map((l) => l.task.id)[0]).toBe('plain/complete-todo');
    expect(loaded).toHaveLength(7);
  });

  it('says a missing file is not found (SILO_TASK_FILE_NOT_FOUND)', async () => {
    const message = await loadError(['fixtures/tasks/nope.tasks.ts'], 'SILO_TASK_FILE_NOT_FOUND');
    expect(message).toBe(`task file not found: ${resolve('fixtures/tasks/nope.tasks.ts')}; pass the path of a module that default-exports a task or a list of them (\`silo init\` writes one)`);
  });

  it('treats a directory as not a task file', async () => {
    await loadError(['fixtures/tasks'], 'SILO_TASK_FILE_NOT_FOUND');
  });

  it('reports a file that throws on import (SILO_TASK_LOAD_FAILED) with the file and the error', async () => {
    const message = await loadError([broken('throws-on-import.ts')], 'SILO_TASK_LOAD_FAILED');
    expect(message).toContain(`cannot load task file ${broken('throws-on-import.ts')}`);
    expect(message).toContain('cannot read the counter fixture');
  });

  it('reports a file without a default export and says what to export', async () => {
    const message = await loadError([broken('no-default-export.ts')], 'SILO_TASK_INVALID');
    expect(message).toBe(`${broken('no-default-export.ts')} has no default export; default-export a task or an array of tasks (defineTask)`);
  });

  it('reports a task without verify, naming the file, the task and the shape of verify', async () => {
    const message = await loadError([broken('no-verify.ts')], 'SILO_TASK_INVALID');
    expect(message).toContain(broken('no-verify.ts'));
    expect(message).toContain('(broken/no-verify)');
    expect(message).toContain('needs a verify function: ({ initial, final, output, trace }) => checks');
  });

  it('reports a user whose model is not provider:model, saying what it takes', async () => {
    const message = await loadError([broken('bad-user.mjs')], 'SILO_TASK_INVALID');
    expect(message).toMatch(/\(broken\/bad-user-model\) has a bad user: user\.model takes provider:model, e\.g\. openai:gpt-4o-mini/);
  });

  it('takes a task with a user and no instruction: its instruction is the user’s brief', async () => {
    const [loaded] = await loadTasks([resolve('fixtures/tasks/user-only.mjs')]);
    expect(loaded!.task.instruction).toBe('I want my order cancelled.');
  });

  it('reports a tool with a broken schema (SILO_SCHEMA_INVALID), naming the file, the tool and the problem', async () => {
    const message = await loadError([broken('broken-schema.ts')], 'SILO_SCHEMA_INVALID');
    expect(message).toContain(broken('broken-schema.ts'));
    // One sentence naming the path and the value, not one line per branch of the meta-schema.
    expect(message).toContain(
      "tool rename of environment named-counter has an invalid inputSchema: inputSchema.properties.name.type is 'strnig'; expected one of object, array, string, number, integer, boolean, null (or an array of them)",
    );
    expect(message).not.toMatch(/must be equal to one of the allowed values|data\//);
  });

  it('reports two tools with the same name', async () => {
    const message = await loadError([broken('duplicate-tools.ts')], 'SILO_TASK_INVALID');
    expect(message).toContain(broken('duplicate-tools.ts'));
    expect(message).toContain('two tools named increment; tool names must be unique');
  });

  it('reports a task id used in two files, naming both', async () => {
    const message = await loadError([broken('duplicate-id-a.ts'), broken('duplicate-id-b.ts')], 'SILO_TASK_INVALID');
    expect(message).toBe(
      `task id broken/same-id is used twice (${broken('duplicate-id-a.ts')} and ${broken('duplicate-id-b.ts')}); task ids must be unique`,
    );
  });
});

describe('importUserModule', () => {
  // What a task file imports of Silo is the command's own copy, not another one under tsx's
  // namespace (ES module and CommonJS .ts files alike); the file itself loads afresh each time.
  // Run by Node itself on the built files: vitest would load them into a module graph of its own.
  const dir = tempDir('silo-load-shared-');
  afterAll(() => dir.remove());

  it.each(['module', 'commonjs'])("a .ts file's import 'silo' in a \"type\": \"%s\" project is the command's copy; the file itself loads afresh", (type) => {
    const project = join(dir.dir, type);
    mkdirSync(join(project, 'node_modules'), { recursive: true });
    symlinkSync(resolve('.'), join(project, 'node_modules', 'silo'));
    writeFileSync(join(project, 'package.json'), `${JSON.stringify({ type })}\n`);
    writeFileSync(join(project, 'tasks.ts'), "import { SiloError } from 'silo';\nexport const shared: unknown = SiloError;\nexport const fresh = {};\n");
    const script = `
      const { SiloError } = await import(${JSON.stringify(pathToFileURL(resolve('dist/bundle/index.js')).href)});
      const { importUserModule } = await import(${JSON.stringify(pathToFileURL(resolve('dist/src/load.js')).href)});
      const first = await importUserModule(${JSON.stringify(join(project, 'tasks.ts'))});
      const second = await importUserModule(${JSON.stringify(join(project, 'tasks.ts'))});
      console.log(JSON.stringify({ loaded: typeof first.shared, own: first.shared === SiloError && second.shared === SiloError, fresh: first.fresh !== second.fresh }));`;
    const out = execFileSync(process.execPath, ['--input-type=module', '-e', script], { cwd: project, encoding: 'utf8' });
    expect(JSON.parse(out)).toEqual({ loaded: 'function', own: true, fresh: true });
  });
});

describe('a .js file with import or export in a "type": "commonjs" package', () => {
  const dir = tempDir('silo-load-esm-js-');
  afterAll(() => dir.remove());

  /** What loadTasks says of `source` as tasks.js in a package of `type`, run by Node on the built files (vitest would load the file its own way). */
  function loadMessage(type: string, source: string): { code: string; message: string; file: string } {
    const project = join(dir.dir, type);
    mkdirSync(project, { recursive: true });
    writeFileSync(join(project, 'package.json'), `${JSON.stringify({ type })}\n`);
    const file = join(project, 'tasks.js');
    writeFileSync(file, source);
    const script = `
      const { loadTasks } = await import(${JSON.stringify(pathToFileURL(resolve('dist/src/load.js')).href)});
      await loadTasks([${JSON.stringify(file)}]).catch((err) => console.log(JSON.stringify({ code: err.code, message: err.message })));`;
    const out = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: project, encoding: 'utf8' });
    return { ...(JSON.parse(out.stdout) as { code: string; message: string }), file };
  }

  it('is refused as a task file in one line that says to rename it .mjs or set "type": "module"', () => {
    // What `npm init -y` writes; Node takes the .js file as CommonJS.
    const { code, message, file } = loadMessage('commonjs', "import { join } from 'node:path';\nexport default [];\n");
    expect(code).toBe('SILO_TASK_LOAD_FAILED');
    expect(message).toBe(`cannot load task file ${file}: ${file} uses import, export or import.meta, but Node loads it as CommonJS (its package.json does not say "type": "module"): rename it .mjs, or set "type": "module"`);
  });

  it('is not told so in a "type": "module" package, where an export out of place is a syntax error', () => {
    const { message, file } = loadMessage('module', 'if (true) { export const a = 1; }\nexport default [];\n');
    expect(message).toMatch(new RegExp(`^cannot load task file .*: syntax error in ${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: Unexpected token 'export'`));
  });

  it('is described the same way when tsx reports it as a require cycle (an agent), and a .ts file is not', () => {
    const cycle = new Error('Cannot require() ES Module /p/a.js in a cycle.');
    expect(describeModuleError(cycle, '/p/a.js', true)).toMatch(/^\/p\/a\.js uses import, export or import\.meta, .*rename it \.mjs/);
    expect(describeModuleError(new SyntaxError("Cannot use 'import.meta' outside a module"), '/p/a.js', true)).toMatch(/rename it \.mjs, or set "type": "module"$/);
    // Only for a file that loads as CommonJS.
    expect(describeModuleError(new SyntaxError("Unexpected token 'export'"), '/p/a.js', false)).toMatch(/^syntax error in \/p\/a\.js/);
    expect(describeModuleError(new Error('Cannot require() ES Module /p/a.ts in a cycle.'), '/p/a.ts', true)).toMatch(/did not compile .*rename it \.mts/);
  });
});
