/**
 * `--env`: an agent's worker sees exactly the variables it was given, nothing else of the host's
 * environment; built-in agents get their base URL and key, and only those.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { agentEnv } from '../../src/agents/builtin.js';
import { runEval, runRollout, SiloError } from '../../src/index.js';
import { readRunFiles, tempDir, testWorld } from '../helpers.js';
import { runSilo } from '../cli/silo.js';

const out = tempDir('silo-env-');
afterAll(() => out.remove());

const PRINTS_ENV = 'fixtures/agents/prints-env.mjs';

describe('the environment of an agent', () => {
  beforeEach(() => {
    process.env.SILO_TEST_HOST_SECRET = 'must-not-leak';
  });
  afterEach(() => {
    delete process.env.SILO_TEST_HOST_SECRET;
  });

  it('is empty by default', async () => {
    const r = await runRollout({ task: testWorld().task, agent: PRINTS_ENV, outDir: out.dir });
    expect(JSON.parse(r.output!)).toEqual({});
  });

  it.each([PRINTS_ENV, 'fixtures/agents/prints-env.ts'])('is exactly the variables given, nothing else of the host (%s)', async (agent) => {
    const r = await runRollout({ task: testWorld().task, agent, env: { FOO: 'bar', EMPTY: '' }, outDir: out.dir });
    expect(JSON.parse(r.output!)).toEqual({ FOO: 'bar', EMPTY: '' });
  });

  it('differs between rollouts that share a pool', async () => {
    const [a, b, none] = await Promise.all([
      runRollout({ task: testWorld().task, agent: PRINTS_ENV, env: { WHO: 'a' }, outDir: out.dir }),
      runRollout({ task: testWorld().task, agent: PRINTS_ENV, env: { WHO: 'b' }, outDir: out.dir }),
      runRollout({ task: testWorld().task, agent: PRINTS_ENV, outDir: out.dir }),
    ]);
    expect([a, b, none].map((r) => JSON.parse(r.output!))).toEqual([{ WHO: 'a' }, { WHO: 'b' }, {}]);
  });

  it('refuses a name that is not a variable name, or a value that is not text', async () => {
    await expect(runRollout({ task: testWorld().task, agent: PRINTS_ENV, env: { 'A=B': 'x' }, outDir: out.dir })).rejects.toThrow(SiloError);
    await expect(runRollout({ task: testWorld().task, agent: PRINTS_ENV, env: { N: 1 as unknown as string }, outDir: out.dir })).rejects.toThrow(
      /'N' must be a variable name with a string value/,
    );
  });
});

describe('agentEnv (what the CLI hands an agent)', () => {
  const host = {
    OPENAI_BASE_URL: 'http://127.0.0.1:1/v1',
    OPENAI_API_KEY: 'sk-1',
    ANTHROPIC_BASE_URL: 'http://127.0.0.1:2',
    ANTHROPIC_API_KEY: 'ak-2',
    HOME: '/home/me',
    MY_VAR: 'mine',
  };

  it('gives a module agent only the --env names', () => {
    expect(agentEnv('agent.ts', [], host)).toEqual({});
    expect(agentEnv('agent.ts', ['MY_VAR', 'OPENAI_API_KEY'], host)).toEqual({ MY_VAR: 'mine', OPENAI_API_KEY: 'sk-1' });
  });

  it('gives a built-in agent none of the host variables (it reaches its model through the gateway), only the --env names', () => {
    expect(agentEnv('openai:m', [], host)).toEqual({});
    expect(agentEnv('anthropic:m', ['MY_VAR'], host)).toEqual({ MY_VAR: 'mine' });
  });

  it('refuses a name the shell does not have, or that is not a name, saying what to do', () => {
    expect(() => agentEnv('a.ts', ['NOPE'], host)).toThrow(/--env NOPE: NOPE is not set in this shell; set it \(export NOPE=\.\.\.\) or drop the flag/);
    expect(() => agentEnv('a.ts', ['MY_VAR=1'], host)).toThrow(/--env takes the name of a variable/);
  });

  it('refuses a built-in agent without a model', () => {
    expect(() => agentEnv('openai:', [], host)).toThrow(/--agent openai: needs a model name, e.g. --agent openai:/);
  });
});

describe('env in an eval', () => {
  it('reaches every rollout; the summary keeps the names, never the values; resume needs the same names', async () => {
    const dir = join(out.dir, 'eval');
    const summary = await runEval({ paths: ['fixtures/eval/quick.tasks.mjs'], agent: PRINTS_ENV, env: { TOKEN: 's3cret' }, outDir: dir });
    expect(summary.options.env).toEqual(['TOKEN']);
    expect(readFileSync(join(dir, 'evals', summary.evalId, 'summary.json'), 'utf8')).not.toContain('s3cret');
    const lines = readFileSync(join(dir, 'evals', summary.evalId, 'runs.jsonl'), 'utf8').trim().split('\n');
    for (const line of lines) {
      const { runId } = JSON.parse(line) as { runId: string };
      expect(readRunFiles(join(dir, 'runs', runId)).result.output).toBe('{"TOKEN":"s3cret"}');
    }
    await expect(runEval({ resume: summary.evalId, outDir: dir })).rejects.toThrow(/was given --env TOKEN; resume it with the same \(got none\)/);
    await expect(runEval({ resume: summary.evalId, outDir: dir, env: { TOKEN: 'again' } })).resolves.toMatchObject({ status: 'completed' });
  });
});

describe('env with reused workers', () => {
  it('reaches agents that share a reused worker, and only the rollouts given it', async () => {
    const dir = join(out.dir, 'reuse');
    const outputs = async (env: Record<string, string> | undefined): Promise<string[]> => {
      const summary = await runEval({ paths: ['fixtures/eval/quick.tasks.mjs'], agent: PRINTS_ENV, trials: 2, reuseWorkers: true, ...(env ? { env } : {}), outDir: dir });
      const lines = readFileSync(join(dir, 'evals', summary.evalId, 'runs.jsonl'), 'utf8').trim().split('\n');
      return lines.map((line) => readRunFiles(join(dir, 'runs', (JSON.parse(line) as { runId: string }).runId)).result.output!);
    };
    expect(new Set(await outputs({ TOKEN: 'shared' }))).toEqual(new Set(['{"TOKEN":"shared"}']));
    expect(new Set(await outputs(undefined))).toEqual(new Set(['{}']));
  });
});

describe('silo run --env', () => {
  it('passes exactly the named variables from the shell', async () => {
    const r = await runSilo(['run', 'fixtures/helpdesk/tasks.ts', '--agent', PRINTS_ENV, '--task', 'helpdesk/close-ticket', '--env', 'FOO', '-e', 'BAR', '--json', '--out', out.dir], {
      FOO: 'foo',
      BAR: 'bar',
      BAZ: 'not passed',
    });
    expect(r.stderr).toBe('');
    const [row] = JSON.parse(r.stdout) as { runDir: string }[];
    expect(JSON.parse(readRunFiles(row!.runDir).result.output!)).toEqual({ FOO: 'foo', BAR: 'bar' });
  });

  it.each([
    [['--env', 'SILO_SURELY_UNSET'], /silo: --env SILO_SURELY_UNSET: SILO_SURELY_UNSET is not set in this shell/],
    [['--env', 'A=B'], /silo: --env takes the name of a variable/],
  ])('exits 2 with one line for %j', async (flags, message) => {
    const r = await runSilo(['run', 'fixtures/helpdesk/tasks.ts', '--agent', PRINTS_ENV, ...flags, '--out', out.dir]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(message);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });
});
