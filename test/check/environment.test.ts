import { describe, expect, it } from 'vitest';
import { checkEnvironment, strictProblem } from '../../src/check/environment.js';
import { defineEnvironment, defineTool } from '../../src/index.js';
import type { Environment, Tool } from '../../src/index.js';

const noop = defineTool({
  name: 'noop',
  description: 'Does nothing.',
  inputSchema: { type: 'object', properties: {} } as const,
  run: () => null,
});

function env(createState: Environment['createState'], tools: Tool[] = [noop]): Environment {
  return defineEnvironment({ name: 'test-env', createState, tools });
}

const codes = (findings: { code: string }[]) => findings.map((f) => f.code);

describe('checkEnvironment: fresh worlds', () => {
  it('passes a createState that returns a deep copy of a seed', async () => {
    const seed = { users: { u1: { name: 'Ada' } } };
    const result = await checkEnvironment(env(() => structuredClone(seed)), 0, 1);
    expect(result).toEqual({ findings: [], usable: true, compared: true, reliable: true });
  });

  it('names a nested object shared through a module-level cache, and still lets the tasks run', async () => {
    const cache = { users: { u1: { name: 'Ada' } }, settings: { theme: 'dark' } };
    const result = await checkEnvironment(env(() => ({ users: cache.users, settings: { ...cache.settings } })), 0, 1);
    expect(result.usable).toBe(true);
    expect(result.reliable).toBe(false);
    expect(result.findings).toEqual([
      {
        check: 'fresh_state',
        code: 'shared_state',
        environment: 'test-env',
        message: expect.stringMatching(/^users is the same object in two worlds: test-env\.createState\(\) must return a deep copy \(structuredClone\)/),
      },
    ]);
  });

  it('refuses the tasks of a createState that returns the same world twice', async () => {
    const world = { count: 0 };
    const result = await checkEnvironment(env(() => world), 0, 3);
    expect(result.usable).toBe(false);
    expect(codes(result.findings)).toEqual(['shared_state']);
    expect(result.findings[0]!.message).toMatch(/returned the same object twice.*structuredClone\(seed\).*its 3 tasks were not run/);
  });

  it('reports a createState that throws or returns no object', async () => {
    const threw = await checkEnvironment(env(() => { throw new Error('seed.json is missing'); }), 0, 1);
    expect(threw.usable).toBe(false);
    expect(threw.findings[0]).toMatchObject({ code: 'create_state_failed', message: expect.stringMatching(/threw: seed\.json is missing; its 1 task was not run/) });
    const nothing = await checkEnvironment(env(() => null), 0, 1);
    expect(nothing.findings[0]).toMatchObject({ code: 'create_state_failed', message: expect.stringMatching(/must return an object \(got null\)/) });
  });

  it('reports a world that structuredClone cannot copy', async () => {
    const result = await checkEnvironment(env(() => ({ format: () => 'x' })), 0, 1);
    expect(result.usable).toBe(false);
    expect(codes(result.findings)).toContain('uncloneable_state');
  });

  it('warns about one object held at two paths of one world', async () => {
    const result = await checkEnvironment(
      env(() => {
        const address = { city: 'Oslo' };
        return { users: { u1: { address } }, orders: { o1: { address } } };
      }),
      0,
      1,
    );
    expect(result.usable).toBe(true);
    expect(result.findings).toEqual([
      expect.objectContaining({ code: 'aliased_state', message: expect.stringMatching(/orders\.o1\.address is users\.u1\.address/) }),
    ]);
  });
});

describe('checkEnvironment: deterministic worlds', () => {
  it('passes a world drawn from ctx.random() and ctx.now()', async () => {
    const result = await checkEnvironment(env((ctx) => ({ code: ctx.random(), at: ctx.now() })), 7, 1);
    expect(result.findings).toEqual([]);
  });

  it('names the first differing path of a world drawn from Math.random()', async () => {
    const result = await checkEnvironment(env(() => ({ users: { u1: { code: Math.random() } } })), 7, 1);
    expect(result.findings).toEqual([
      expect.objectContaining({
        check: 'deterministic_state',
        code: 'nondeterministic_state',
        message: expect.stringMatching(/not deterministic for a seed: two worlds built with seed 7 differ at users\.u1\.code \(0\.\d+ vs 0\.\d+\); draw from ctx\.random\(\)/),
      }),
    ]);
    expect(result.usable).toBe(true);
  });
});

describe('checkEnvironment: tool schemas', () => {
  const tool = (name: string, inputSchema: Record<string, unknown>, description = `The ${name} tool.`): Tool =>
    defineTool({ name, description, inputSchema, run: () => null });

  it('names a tool whose schema only strict mode refuses, and the keyword', async () => {
    const loose = tool('rename', { type: 'object', properties: { a: { type: 'string', minLenght: 1 } } });
    const result = await checkEnvironment(env(() => ({}), [noop, loose]), 0, 1);
    expect(result.findings).toEqual([
      {
        check: 'tool_schemas',
        code: 'schema_not_strict',
        environment: 'test-env',
        message: 'tool rename: ajv strict mode refuses the inputSchema: unknown keyword: "minLenght"',
      },
    ]);
  });

  it('reports duplicate names and missing descriptions', async () => {
    const result = await checkEnvironment(env(() => ({}), [noop, { ...noop }, tool('blank', { type: 'object' }, ' ')]), 0, 1);
    expect(result.findings.map((f) => f.message)).toEqual([
      'two tools are named noop; tool names must be unique',
      'tool blank has no description; agents choose tools by their descriptions',
    ]);
  });
});

describe('strictProblem', () => {
  it('accepts formats and union types, which model APIs use', () => {
    expect(strictProblem({ type: 'object', properties: { email: { type: 'string', format: 'email' }, note: { type: ['string', 'null'] } } })).toBeNull();
  });

  it('refuses keywords that need a type the schema does not give', () => {
    expect(strictProblem({ type: 'object', properties: { a: { minLength: 1 } } })).toMatch(/missing type "string" for keyword "minLength"/);
  });

  it('accepts a top level without type: agents get it as type: object (model APIs want one)', () => {
    expect(strictProblem({ properties: { a: { type: 'string' } }, required: ['a'] })).toBeNull();
  });

  it('refuses a schema that is not an object', () => {
    expect(strictProblem('string')).toBe('inputSchema must be an object (a JSON Schema)');
  });
});
