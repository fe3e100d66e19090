/**
 * The sandbox of `silo run` and `silo eval` started before commander parses the flags
 * (src/cli/run-early.ts): the guess read from argv, the command taking it, and no sandbox left
 * running by a command that does not take it (a usage error, a task file that does not load, a
 * guess the flags contradict).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { main } from '../../src/cli/main.js';
import { guessEval, guessRun, startEarlyEval, startEarlyRun, takeEarlyEval, takeEarlyRun } from '../../src/cli/run-early.js';
import { DEFAULT_EVAL_CONCURRENCY } from '../../src/options.js';
import { SandboxPool } from '../../src/sandbox/pool.js';
import { shutdown } from '../../src/shutdown.js';
import { tempDir } from '../helpers.js';
import { runSilo } from './silo.js';

const AGENT = 'fixtures/agents/bench-caller.mjs';
const TASKS = 'fixtures/bench/tasks.mjs';

/** This process's child processes (a sandbox is one: setpriv, bubblewrap or unshare's, or Node's). */
function children(): string[] {
  return readdirSync('/proc/self/task').flatMap((t) => readFileSync(`/proc/self/task/${t}/children`, 'utf8').trim().split(' ').filter(Boolean));
}

/** `work`, with this process's stdout and stderr silenced (the command's own lines are not the test's). */
async function quietly<T>(work: () => Promise<T>): Promise<T> {
  const [stdout, stderr] = [process.stdout.write, process.stderr.write];
  process.stdout.write = process.stderr.write = () => true;
  try {
    return await work();
  } finally {
    [process.stdout.write, process.stderr.write] = [stdout, stderr];
  }
}

/** Waits for the children to be `expected` (a killed sandbox is reaped as its exit is seen). */
async function settle(expected: string[]): Promise<string[]> {
  for (let i = 0; i < 100 && children().join() !== expected.join(); i++) await new Promise((r) => setTimeout(r, 50));
  return children();
}

describe('guessRun', () => {
  const agentFile = resolve(AGENT);

  it('reads the agent and --no-network in the forms commander takes plainly', () => {
    expect(guessRun([TASKS, '--agent', AGENT])).toEqual({ agentFile, noNetwork: false });
    expect(guessRun([TASKS, '-a', AGENT, '-t', 'x'])).toEqual({ agentFile, noNetwork: false });
    expect(guessRun(['--agent=' + AGENT, TASKS, '--no-network', '--isolation', 'process'])).toEqual({ agentFile, noNetwork: true });
    expect(guessRun([TASKS, '--agent', 'other.mjs', '--agent', AGENT])).toEqual({ agentFile, noNetwork: false });
  });

  it('guesses nothing where no sandbox will run or argv is not plain', () => {
    expect(guessRun([TASKS, '--agent', AGENT, '--isolation', 'thread'])).toBeNull();
    expect(guessRun([TASKS, '--agent', AGENT, '--isolation=thread'])).toBeNull();
    expect(guessRun([TASKS, '--agent', AGENT, '--help'])).toBeNull();
    expect(guessRun([TASKS, '-h'])).toBeNull();
    expect(guessRun([TASKS, '--', '--agent', AGENT])).toBeNull();
    expect(guessRun([TASKS])).toBeNull();
    expect(guessRun([TASKS, '--agent', 'openai:gpt-4o-mini'])).toBeNull();
    expect(guessRun([TASKS, '--agent', 'fixtures/agents/no-such-agent.mjs'])).toBeNull();
    expect(guessRun([TASKS, '--agent', 'fixtures/agents'])).toBeNull();
  });
});

describe('the sandbox started early', () => {
  it('is started before the flags are parsed, and ended at shutdown when no command takes it', async () => {
    const before = children();
    await startEarlyRun([TASKS, '--agent', AGENT]);
    expect(children().length).toBe(before.length + 1);
    await shutdown();
    expect(await settle(before)).toEqual(before);
  });

  it('is ended, not used, when the parsed flags ask for another one', async () => {
    const before = children();
    await startEarlyRun([TASKS, '--agent', AGENT]);
    expect(children().length).toBe(before.length + 1);
    expect(await takeEarlyRun({ agentFile: resolve(AGENT), isolation: 'process', noNetwork: true })).toBeUndefined();
    expect(await settle(before)).toEqual(before);
    await shutdown();
  });

  it('is left running by no command that fails: a usage error, a task file that does not load', async () => {
    const out = tempDir('silo-early-');
    try {
      const before = children();
      expect(await quietly(() => main(['run', TASKS, '--agent', AGENT, '--max-turns', '0', '--out', out.dir]))).toBe(2);
      expect(await quietly(() => main(['run', 'fixtures/bench/no-such-tasks.mjs', '--agent', AGENT, '--out', out.dir]))).toBe(2);
      expect(await settle(before)).toEqual(before);
    } finally {
      out.remove();
    }
  });

  it('says what it has to say of the sandbox only for a command that takes it, once', async () => {
    const out = tempDir('silo-early-said-');
    try {
      // (SILO_SANDBOX=process: the sandbox runs without namespaces, and says so)
      const usage = await runSilo(['run', TASKS, '--agent', AGENT, '--max-turns', '0', '--out', out.dir], { SILO_SANDBOX: 'process' });
      expect(usage.code).toBe(2);
      expect(usage.stderr).not.toMatch(/namespaces/);
      expect(usage.stderr.trim().split('\n')).toHaveLength(1);
      const ran = await runSilo(['run', TASKS, '-t', 'bench/calls-0', '--agent', AGENT, '--out', out.dir], { SILO_SANDBOX: 'process' });
      expect(ran.code).toBe(0);
      expect(ran.stderr.match(/Linux namespaces are not available here \(turned off\)/g)).toHaveLength(1);
    } finally {
      out.remove();
    }
  });
});

describe('guessEval', () => {
  const agentFile = resolve(AGENT);

  it('reads the agent, --no-network, --concurrency, --reuse-workers and --trials in the forms commander takes plainly', () => {
    expect(guessEval([TASKS, '--agent', AGENT])).toEqual({ agentFile, noNetwork: false, concurrency: DEFAULT_EVAL_CONCURRENCY, reuse: false, trials: 1 });
    expect(guessEval([TASKS, '-a', AGENT, '-k', '256', '-c', '64', '--reuse-workers'])).toEqual({ agentFile, noNetwork: false, concurrency: 64, reuse: true, trials: 256 });
    expect(guessEval(['--agent=' + AGENT, TASKS, '--concurrency=8', '--trials=3', '--no-network', '-t', 'bench/*'])).toEqual({ agentFile, noNetwork: true, concurrency: 8, reuse: false, trials: 3 });
  });

  it('guesses nothing for an eval that runs no sandbox here, keeps its stored options, or says it otherwise', () => {
    expect(guessEval([TASKS, '--agent', AGENT, '--isolation', 'thread'])).toBeNull();
    expect(guessEval(['--resume', 'x', '--agent', AGENT])).toBeNull();
    expect(guessEval([TASKS, '--agent', AGENT, '--queue', 'redis://127.0.0.1:6379'])).toBeNull();
    expect(guessEval([TASKS, '--agent', AGENT, '--help'])).toBeNull();
    expect(guessEval([TASKS, '--agent', 'openai:gpt-4o-mini'])).toBeNull();
    // (values commander would refuse, or read otherwise: the command decides)
    expect(guessEval([TASKS, '--agent', AGENT, '-c', '0'])).toBeNull();
    expect(guessEval([TASKS, '--agent', AGENT, '--concurrency', 'many'])).toBeNull();
    expect(guessEval([TASKS, '--agent', AGENT, '-k', '1e3'])).toBeNull();
  });
});

describe("silo eval's sandbox started early", () => {
  it('is taken by the eval whose flags ask for it, and ended when they ask for another', async () => {
    const before = children();
    await startEarlyEval([TASKS, '--agent', AGENT, '-c', '4']);
    expect(children().length).toBe(before.length + 1);
    const want = { agentFile: resolve(AGENT), isolation: 'process', noNetwork: false, concurrency: 4, reuse: false };
    const taken = await takeEarlyEval(want);
    expect(taken?.trials).toBe(1);
    expect(children().length).toBe(before.length + 1);
    await taken!.pool.destroy();
    expect(await settle(before)).toEqual(before);

    await startEarlyEval([TASKS, '--agent', AGENT, '-c', '4']);
    expect(await takeEarlyEval({ ...want, reuse: true })).toBeUndefined();
    expect(await settle(before)).toEqual(before);
    // A `silo run`'s is not an eval's.
    await startEarlyRun([TASKS, '--agent', AGENT]);
    expect(await takeEarlyEval({ ...want, concurrency: 1 })).toBeUndefined();
    expect(await settle(before)).toEqual(before);
    await shutdown();
  });

  it('is left running by no eval that fails: a usage error, a task file that does not load', async () => {
    const out = tempDir('silo-early-eval-fails-');
    try {
      const before = children();
      expect(await quietly(() => main(['eval', TASKS, '--agent', AGENT, '-e', 'SILO_TEST_NOT_SET_ANYWHERE', '--out', out.dir]))).toBe(2);
      expect(await quietly(() => main(['eval', 'fixtures/bench/no-such-tasks.mjs', '--agent', AGENT, '--out', out.dir]))).toBe(2);
      expect(await settle(before)).toEqual(before);
    } finally {
      out.remove();
    }
  });

  it('runs the eval: one sandbox, started before the flags were parsed, and none left after', async () => {
    const out = tempDir('silo-early-eval-');
    const calls: SandboxPool[] = [];
    const realWarm = SandboxPool.prototype.warm;
    SandboxPool.prototype.warm = function (this: SandboxPool, ...args: Parameters<SandboxPool['warm']>) {
      calls.push(this);
      return realWarm.apply(this, args);
    };
    try {
      const before = children();
      expect(await quietly(() => main(['eval', TASKS, '-t', 'bench/calls-0', '--agent', AGENT, '-k', '3', '-c', '2', '--out', out.dir, '-r', 'json', '--output', join(out.dir, 'report.json')]))).toBe(0);
      expect(calls.length).toBeGreaterThanOrEqual(2);
      // The early sandbox's warm (its mounts) and the eval's (its first workers): the same pool.
      expect(new Set(calls).size).toBe(1);
      expect(await settle(before)).toEqual(before);
      expect(JSON.parse(readFileSync(join(out.dir, 'report.json'), 'utf8')).totals.passed).toBe(3);
    } finally {
      SandboxPool.prototype.warm = realWarm;
      out.remove();
    }
  });
});
