/**
 * A TypeScript agent is compiled on the host, so the compiler's reads must be held to the rule its
 * worker is held to: the agent's folder and its node_modules, nothing else. Each agent in
 * fixtures/agents/hostile/compile/ imports something of the host in one of the ways a bundler
 * follows; each must end as a load_error that names the refused file, and no compiled module may
 * hold what it asked for.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { runRollout } from '../../src/index.js';
import { readRunFiles, tempDir, testWorld } from '../helpers.js';

// Set before the compiler runs: a bundle of /proc/self/environ would carry it.
const SECRET_NAME = 'SILO_CONFINE_TEST_SECRET';
const SECRET_VALUE = 'compile-time-secret-that-must-not-leak';
process.env[SECRET_NAME] = SECRET_VALUE;

const out = tempDir('silo-confine-');
afterAll(() => {
  delete process.env[SECRET_NAME];
  out.remove();
});

const helpdesk = fileURLToPath(new URL('../../fixtures/helpdesk/', import.meta.url));
const compileDir = join(tmpdir(), `silo-agents-${process.getuid?.() ?? 'user'}`);

function agent(name: string): string {
  return fileURLToPath(new URL(`../../fixtures/agents/hostile/compile/${name}`, import.meta.url));
}

/** What of the host each agent asks for, and a string that the file holds. */
const FORMS: { name: string; how: string; file: string | RegExp; marker: string }[] = [
  { name: 'imports-answers-json.ts', how: 'a JSON file next to the tasks', file: join(helpdesk, 'data.json'), marker: 'dana.reyes@acme.test' },
  { name: 'imports-task-file.ts', how: 'the task module itself', file: join(helpdesk, 'tasks.ts'), marker: 'helpdesk/deactivate' },
  { name: 'imports-task-text.ts', how: 'the task file as text', file: join(helpdesk, 'tasks.ts'), marker: 'helpdesk/deactivate' },
  { name: 'imports-environ.ts', how: 'an absolute path (/proc/self/environ)', file: /\/proc\/(self|\d+)\/environ/, marker: SECRET_VALUE },
  { name: 'requires-answers.ts', how: 'require() of a relative path out of the folder', file: join(helpdesk, 'data.json'), marker: 'dana.reyes@acme.test' },
  { name: 'imports-dynamically.ts', how: 'a dynamic import of a fixed path', file: join(helpdesk, 'data.json'), marker: 'dana.reyes@acme.test' },
  { name: 'alias/agent.ts', how: 'a tsconfig paths alias pointing outside', file: join(helpdesk, 'data.json'), marker: 'dana.reyes@acme.test' },
];

/**
 * The compiled agents written since `since` (ms): the files of the private folder itself (task files
 * compiled, which hold the tasks by design, are in its tasks/ folder, which no worker may read).
 */
function compiledSince(since: number): string[] {
  let names: string[];
  try {
    names = readdirSync(compileDir);
  } catch {
    return [];
  }
  return names.map((n) => join(compileDir, n)).filter((f) => statSync(f).isFile() && statSync(f).mtimeMs >= since - 1_000);
}

describe('compiling a TypeScript agent', () => {
  for (const form of FORMS) {
    it(`refuses ${form.how} (${form.name}) as a load_error naming the file, and writes nothing that holds it`, async () => {
      const since = Date.now();
      const world = testWorld();
      const result = await runRollout({ task: world.task, agent: agent(form.name), outDir: out.dir, limits: { timeoutMs: 20_000 } });
      expect(result.termination).toBe('load_error');
      expect(result.status).toBe('error');
      // (/proc/self is a link: the compiler names where it leads)
      if (typeof form.file === 'string') expect(result.error?.message).toContain(form.file);
      else expect(result.error?.message).toMatch(form.file);
      expect(result.error?.message).toMatch(/outside its folder .* move the file into the agent's folder \(or into a package\)/);
      // The verifier never saw an answer, and no compiled module carries the file's content.
      expect(result.output).toBeNull();
      for (const file of compiledSince(since)) expect(readFileSync(file, 'utf8')).not.toContain(form.marker);
    });
  }

  it('still bundles what the agent keeps in its own folder, and imports its packages', async () => {
    const world = testWorld();
    const result = await runRollout({ task: world.task, agent: fileURLToPath(new URL('../../fixtures/agents/imports.ts', import.meta.url)), outDir: out.dir });
    expect(result.termination).toBe('returned');
    expect(result.output).toBe('hello agent 26');
  });
});

describe('a permission the worker refuses', () => {
  const perm = (name: string): string => fileURLToPath(new URL(`../../fixtures/agents/perm/${name}`, import.meta.url));

  it('names the permission and the file in the load error, and what to do', async () => {
    const world = testWorld();
    const result = await runRollout({ task: world.task, agent: perm('imports-outside.mjs'), outDir: out.dir });
    expect(result.termination).toBe('load_error');
    const refused = fileURLToPath(new URL('../../fixtures/agents/lib/shared.mjs', import.meta.url));
    expect(result.error?.message).toContain(`(FileSystemRead ${refused}): an agent may read only its own folder and its node_modules`);
  });

  it('names WorkerThreads in what the agent threw, in the trace and the diagnosis', async () => {
    const world = testWorld();
    const result = await runRollout({ task: world.task, agent: perm('starts-thread.mjs'), outDir: out.dir });
    expect(result.termination).toBe('threw');
    const said = /Access to this API has been restricted \(WorkerThreads\): an agent may not start worker threads/;
    expect(result.diagnosis.find((f) => f.code === 'threw')?.message).toMatch(said);
    const threw = readRunFiles(result.runDir).trace.find((e) => e.type === 'agent_threw');
    expect(threw?.type === 'agent_threw' && threw.error.message).toMatch(said);
  });
});
