/**
 * Tool validators are compiled by ajv once per schema, and their code is kept in the private folder
 * (src/rollout/validators.ts): a later command that meets the same schema validates with that code
 * and never loads ajv. Each test uses schemas no command has met before (a random $comment), and
 * a fresh copy of the modules stands for the later command.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { afterAll, describe, expect, it, vi } from 'vitest';
import type { JsonSchema } from '../../src/types.js';
import { compileTool, effectiveSchema, prepareValidators, validateInput } from '../../src/rollout/validate.js';
import { codeFile } from '../../src/rollout/validators.js';
import { tool } from '../builders.js';

type ValidateModule = typeof import('../../src/rollout/validate.js');

/** validate.ts as a later command loads it: nothing made or loaded in this process yet. */
async function laterCommand(): Promise<ValidateModule> {
  vi.resetModules();
  return (await import('../../src/rollout/validate.js')) as ValidateModule;
}

const written: string[] = [];
afterAll(() => {
  for (const file of written) rmSync(file, { force: true });
});

/** A schema no command has met, and where its validator's code is kept. */
function unmet(schema: JsonSchema): { schema: JsonSchema; file: string } {
  const fresh = { ...schema, $comment: randomUUID() };
  const file = codeFile(JSON.stringify(effectiveSchema(fresh)))!;
  written.push(file);
  return { schema: fresh, file };
}

const CASES: [string, JsonSchema, unknown[]][] = [
  [
    'types, required, closed at the top',
    { type: 'object', properties: { id: { type: 'string' }, n: { type: 'integer', minimum: 0 }, on: { type: 'boolean' } }, required: ['id'] },
    [{ id: 'a', n: 1 }, { n: -1 }, { id: 3, extra: true }, {}],
  ],
  [
    'formats',
    { type: 'object', properties: { when: { type: 'string', format: 'date-time' }, mail: { type: 'string', format: 'email' }, site: { type: 'string', format: 'uri' } } },
    [{ when: '2026-12-04T10:00:00Z', mail: 'a@b.co', site: 'https://x.test/' }, { when: 'tuesday', mail: 'nobody', site: 'not a uri' }],
  ],
  [
    'lengths counted in characters, not UTF-16 units',
    { type: 'object', properties: { tag: { type: 'string', maxLength: 2, minLength: 2 } } },
    [{ tag: '😀😀' }, { tag: '😀😀😀' }, { tag: 'a' }],
  ],
  [
    'unique items, enums and consts',
    { type: 'object', properties: { items: { type: 'array', uniqueItems: true, minItems: 1 }, color: { enum: ['red', 'green'] }, v: { const: { a: [1] } } } },
    [{ items: [{ a: 1 }, { a: 1 }], color: 'blue', v: { a: [2] } }, { items: [{ a: 1 }, { a: 2 }], color: 'red', v: { a: [1] } }, { items: [] }],
  ],
  [
    'definitions, $ref, oneOf and patterns',
    {
      type: 'object',
      definitions: { id: { type: 'string', pattern: '^#W[0-9]+$' } },
      properties: { order: { $ref: '#/definitions/id' }, pay: { oneOf: [{ type: 'string' }, { type: 'object', properties: { card: { type: 'string' } }, required: ['card'] }] } },
      additionalProperties: false,
    },
    [{ order: '#W12', pay: 'cash' }, { order: 'W12', pay: { cash: 1 } }, { order: '#W1', pay: { card: 'x' }, other: 1 }],
  ],
];

describe('validators kept as code', () => {
  it.each(CASES)("judge inputs as ajv's compiled validator does, errors included: %s", async (_name, raw, inputs) => {
    const { schema, file } = unmet(raw);
    const first = tool('t', schema);
    const compiled = inputs.map((input) => validateInput(first, 'e', input));
    expect(existsSync(file)).toBe(true);

    const later = await laterCommand();
    const compile = vi.spyOn(Ajv.prototype, 'compile');
    try {
      const again = tool('t', schema);
      expect(inputs.map((input) => later.validateInput(again, 'e', input))).toEqual(compiled);
      expect(compile).not.toHaveBeenCalled();
    } finally {
      compile.mockRestore();
    }
    // Not a case where everything passes, or everything fails.
    expect(compiled.some((r) => r === null)).toBe(true);
    expect(compiled.some((r) => r !== null)).toBe(true);
  });

  it('are made ready for a task file before its tools are checked: prepareValidators waits only for what ajv must compile', async () => {
    const { schema, file } = unmet({ type: 'object', properties: { q: { type: 'string' } } });
    const later = await laterCommand();
    const waiting = later.prepareValidators([tool('t', schema), 'not a tool', { inputSchema: 3 }]);
    expect(waiting).toBeInstanceOf(Promise);
    await waiting;
    later.compileTool(tool('t', schema), 'e');
    expect(existsSync(file)).toBe(true);

    const third = await laterCommand();
    // Kept now: nothing to wait for, and ajv is not loaded.
    expect(third.prepareValidators([tool('t', schema)])).toBeUndefined();
    // Compiled in this process: nothing to wait for either.
    const t = tool('u', unmet({ type: 'object' }).schema);
    compileTool(t, 'e');
    expect(prepareValidators([t])).toBeUndefined();
  });

  it('compile again, and keep anew, what cannot be run: a torn or foreign file is not trusted to validate', async () => {
    const { schema, file } = unmet({ type: 'object', properties: { n: { type: 'number' } }, required: ['n'] });
    for (const content of ['module.exports = valid', 'module.exports = 42;', '']) {
      writeFileSync(file, content);
      const later = await laterCommand();
      const compile = vi.spyOn(Ajv.prototype, 'compile');
      try {
        const t = tool('t', schema);
        expect(later.validateInput(t, 'e', { n: 1 })).toBeNull();
        expect(later.validateInput(t, 'e', {})?.message).toContain("missing required parameter 'n'");
        expect(compile).toHaveBeenCalledTimes(1);
      } finally {
        compile.mockRestore();
      }
      expect(readFileSync(file, 'utf8')).toContain('function validate');
    }
  });

  it('keep nothing for a schema ajv cannot compile: it is refused the same way every time', async () => {
    const { schema, file } = unmet({ type: 'object', properties: { a: { $ref: '#/definitions/missing' } } });
    for (const mod of [await laterCommand(), await laterCommand()]) {
      expect(() => mod.compileTool(tool('broken', schema), 'e')).toThrow(/tool broken of environment e has an invalid inputSchema: .*can't resolve reference/);
    }
    expect(existsSync(file)).toBe(false);
  });

  it("keep nothing for a schema that does not stand alone: one with an $id (others may $ref it), a $ref outside itself, a number JSON cannot write", async () => {
    const shared = `https://example.test/${randomUUID()}`;
    const withId = unmet({ $id: shared, type: 'object', properties: { n: { type: 'number', maximum: 100 } } });
    const referring = unmet({ type: 'object', properties: { inner: { $ref: shared } } });
    const infinite = unmet({ type: 'object', properties: { n: { type: 'number', maximum: Infinity } } });
    for (const mod of [await laterCommand(), await laterCommand()]) {
      const compile = vi.spyOn(Ajv.prototype, 'compile');
      try {
        const tools = [tool('shared', withId.schema), tool('refers', referring.schema), tool('infinite', infinite.schema)];
        expect(mod.prepareValidators(tools)).toBeInstanceOf(Promise);
        for (const t of tools) mod.compileTool(t, 'e');
        // The $ref finds the schema ajv compiled in this command, as before validators were kept.
        expect(mod.validateInput(tools[1]!, 'e', { inner: { n: 101 } })?.message).toContain('must be <= 100');
        expect(mod.validateInput(tools[1]!, 'e', { inner: { n: 99 } })).toBeNull();
        expect(compile).toHaveBeenCalledTimes(3);
      } finally {
        compile.mockRestore();
      }
    }
    for (const { file } of [withId, referring, infinite]) expect(existsSync(file)).toBe(false);
  });
});
