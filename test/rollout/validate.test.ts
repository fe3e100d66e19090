import { randomUUID } from 'node:crypto';
import { describe, it, expect, vi } from 'vitest';
import { Ajv } from 'ajv';
import { SiloError } from '../../src/errors.js';
import { compileTool, effectiveSchema, validateInput } from '../../src/rollout/validate.js';
import { tool } from '../builders.js';

const deactivate = tool('deactivate_user', {
  type: 'object',
  properties: {
    user_id: { type: 'string' },
    reason: { type: 'string' },
    notify: { type: 'boolean' },
  },
  required: ['user_id'],
});

const updateTicket = tool('update_ticket', {
  type: 'object',
  properties: {
    ticket_id: { type: 'string' },
    status: { type: 'string', enum: ['open', 'pending', 'closed'] },
    assignee_id: { type: ['string', 'null'] },
  },
  required: ['ticket_id'],
});

const validate = (t: typeof deactivate, input: unknown) => validateInput(t, 'test-env', input);

describe('validateInput', () => {
  it('accepts an input that matches the schema', () => {
    expect(validate(deactivate, { user_id: 'u1' })).toBeNull();
    expect(validate(deactivate, { user_id: 'u1', reason: 'left', notify: false })).toBeNull();
  });

  describe('a schema that does not set additionalProperties', () => {
    it('rejects an undeclared top-level property and names it', () => {
      const invalid = validate(deactivate, { user_id: 'u1', force: true });
      expect(invalid).not.toBeNull();
      expect(invalid!.message).toContain("unknown parameter 'force'");
      expect(invalid!.issues).toEqual([{ path: 'force', problem: expect.stringContaining("'force'") }]);
    });

    it('lists the real parameters with their types and which are required', () => {
      const invalid = validate(deactivate, { user_id: 'u1', force: true });
      expect(invalid!.message).toContain('deactivate_user takes: user_id (string, required), reason (string), notify (boolean)');
      expect(invalid!.parameters).toEqual(['user_id', 'reason', 'notify']);
    });

    it("suggests the nearest parameter ('userId' → 'user_id')", () => {
      const invalid = validate(deactivate, { userId: 'u1' });
      expect(invalid!.message).toContain("unknown parameter 'userId' (did you mean 'user_id'?)");
    });

    it('gives no suggestion when no parameter is close', () => {
      const invalid = validate(deactivate, { user_id: 'u1', zzzzzzzzzz: 1 });
      expect(invalid!.message).toContain("unknown parameter 'zzzzzzzzzz'");
      expect(invalid!.message).not.toContain('did you mean');
    });

    it('shows a union type as a|b', () => {
      const invalid = validateInput(updateTicket, 'test-env', {});
      expect(invalid!.message).toContain('assignee_id (string|null)');
    });
  });

  it('names a missing required parameter', () => {
    const invalid = validate(deactivate, { reason: 'left' });
    expect(invalid!.message).toContain("missing required parameter 'user_id'");
    expect(invalid!.issues).toContainEqual({ path: 'user_id', problem: "missing required parameter 'user_id'" });
  });

  it('names a parameter of the wrong type and the type it must be', () => {
    const invalid = validate(deactivate, { user_id: 42 });
    expect(invalid!.message).toContain("'user_id' must be string");
  });

  it('lists the allowed values of an enum', () => {
    const invalid = validateInput(updateTicket, 'test-env', { ticket_id: 't1', status: 'done' });
    expect(invalid!.message).toContain(`'status' must be one of ["open","pending","closed"]`);
  });

  it('says the input itself must be an object when it is not', () => {
    expect(validate(deactivate, 'u1')!.message).toContain('input must be object');
    expect(validate(deactivate, null)!.message).toContain('input must be object');
  });

  it('accepts extra properties when the schema sets additionalProperties: true', () => {
    const open = tool('open', { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: true });
    expect(validateInput(open, 'test-env', { a: 'x', b: 1, c: { d: 2 } })).toBeNull();
  });

  it('rejects extras through additionalProperties: false as written', () => {
    const closed = tool('closed', { type: 'object', properties: { a: { type: 'string' } }, additionalProperties: false });
    expect(validateInput(closed, 'test-env', { a: 'x', b: 1 })!.message).toContain("unknown parameter 'b'");
  });

  describe('nested objects follow their schema as written', () => {
    const search = tool('search', {
      type: 'object',
      properties: {
        filter: { type: 'object', properties: { team: { type: 'string' } } },
        strict: { type: 'object', properties: { team: { type: 'string' } }, additionalProperties: false, required: ['team'] },
      },
    });

    it('an open nested object accepts extras', () => {
      expect(validateInput(search, 'test-env', { filter: { team: 'support', extra: 1 } })).toBeNull();
    });

    it('a closed nested object rejects extras with the full path', () => {
      const invalid = validateInput(search, 'test-env', { strict: { team: 'support', extra: 1 } });
      expect(invalid!.message).toContain("unknown parameter 'strict.extra'");
      expect(invalid!.issues[0]!.path).toBe('strict.extra');
    });

    it('a nested type error and a nested missing property name their full paths', () => {
      const invalid = validateInput(search, 'test-env', { filter: { team: 7 }, strict: {} });
      expect(invalid!.message).toContain("'filter.team' must be string");
      expect(invalid!.message).toContain("missing required parameter 'strict.team'");
    });
  });

  it('names every problem when there are several', () => {
    const invalid = validateInput(updateTicket, 'test-env', { status: 'done', ticketId: 't1', assignee_id: 3 });
    const message = invalid!.message;
    expect(message).toContain("missing required parameter 'ticket_id'");
    expect(message).toContain("'status' must be one of");
    expect(message).toContain("unknown parameter 'ticketId' (did you mean 'ticket_id'?)");
    expect(message).toContain("'assignee_id' must be string,null");
    expect(invalid!.issues.map((i) => i.path).sort()).toEqual(['assignee_id', 'status', 'ticketId', 'ticket_id']);
  });

  it('says a tool without properties takes no parameters', () => {
    const ping = tool('ping', { type: 'object' });
    expect(validateInput(ping, 'test-env', { x: 1 })!.message).toBe("invalid input for ping: unknown parameter 'x'. ping takes no parameters.");
  });
});

describe('compileTool', () => {
  it('turns a broken schema into a SiloError SILO_SCHEMA_INVALID naming the tool and environment', () => {
    const broken = tool('broken_tool', { type: 'object', properties: { a: { type: 'strnig' } } });
    let caught: unknown;
    try {
      compileTool(broken, 'my-env');
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(SiloError);
    expect((caught as SiloError).code).toBe('SILO_SCHEMA_INVALID');
    expect((caught as SiloError).message).toContain('tool broken_tool of environment my-env has an invalid inputSchema');
  });

  it.each([
    [{ type: 'objekt' }, "inputSchema.type is 'objekt'; expected one of object, array, string, number, integer, boolean, null (or an array of them)"],
    [{ type: 'object', required: 'id' }, "inputSchema.required is 'id'; expected an array"],
    [{ type: 'object', properties: { n: { type: 'integer', minimum: 'zero' } } }, "inputSchema.properties.n.minimum is 'zero'; expected a number"],
    [{ type: 'object', properties: { s: { type: 'string', minLength: -1 } } }, 'inputSchema.properties.s.minLength is -1; it must be >= 0'],
    [{ type: 'object', required: [1], properties: { a: { enum: 3 } } }, 'inputSchema.required.0 is 1; expected a string (and 1 more problem)'],
  ])('says in one sentence which value at which path is wrong: %j', (schema, sentence) => {
    expect(() => compileTool(tool('t', schema), 'e')).toThrow(`tool t of environment e has an invalid inputSchema: ${sentence}`);
  });

  it('refuses an inputSchema that is not an object', () => {
    for (const schema of [null, 'object', [{ type: 'object' }]]) {
      const bad = tool('bad', schema as never);
      expect(() => compileTool(bad, 'e')).toThrow(expect.objectContaining({ code: 'SILO_SCHEMA_INVALID' }));
    }
  });

  it('checks a schema with the saved meta-schema validator: ajv never compiles the meta-schema', () => {
    const validateSchema = vi.spyOn(Ajv.prototype, 'validateSchema');
    const compile = vi.spyOn(Ajv.prototype, 'compile');
    try {
      // (a schema no command has met: its validator's code is not kept yet, see validators.test.ts)
      compileTool(tool('checked', { type: 'object', properties: { n: { type: 'number' } }, $comment: randomUUID() }), 'e');
      expect(() => compileTool(tool('unchecked', { type: 'objekt' }), 'e')).toThrow(/inputSchema.type is 'objekt'/);
      expect(validateSchema).not.toHaveBeenCalled();
      // The tool's own schema only (once: the broken one never reaches ajv).
      expect(compile.mock.calls.map(([schema]) => schema)).toEqual([expect.objectContaining({ properties: { n: { type: 'number' } } })]);
    } finally {
      validateSchema.mockRestore();
      compile.mockRestore();
    }
  });

  it('compiles the validator of a tool once, however often it validates', () => {
    const compile = vi.spyOn(Ajv.prototype, 'compile');
    try {
      const fresh = tool('fresh', { type: 'object', properties: { n: { type: 'number' } }, $comment: randomUUID() });
      const first = compileTool(fresh, 'e');
      for (let i = 0; i < 100; i++) validateInput(fresh, 'e', { n: i });
      validateInput(fresh, 'e', { n: 'x' });
      expect(compileTool(fresh, 'e')).toBe(first);
      expect(compile).toHaveBeenCalledTimes(1);
    } finally {
      compile.mockRestore();
    }
  });
});

describe('effectiveSchema', () => {
  it('closes an object schema at the top level without touching the original', () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } } };
    expect(effectiveSchema(schema)).toEqual({ ...schema, required: [], additionalProperties: false });
    expect(schema).not.toHaveProperty('additionalProperties');
    expect(schema).not.toHaveProperty('required');
  });

  it('leaves how extras are handled alone when the schema says it or composes other schemas', () => {
    for (const schema of [
      { type: 'object', additionalProperties: true },
      { type: 'object', patternProperties: { '^x': {} } },
      { type: 'object', anyOf: [{ properties: { a: {} } }] },
      { type: 'object', properties: { a: {} }, unevaluatedProperties: false },
    ]) {
      const effective = effectiveSchema(schema);
      expect(effective).toEqual({ properties: {}, required: [], ...schema });
      expect('additionalProperties' in effective).toBe('additionalProperties' in schema);
    }
  });

  it('leaves a schema of another type alone', () => {
    const schema = { type: 'string' };
    expect(effectiveSchema(schema)).toBe(schema);
  });

  it('writes an object schema out in full: type, properties and required are always there', () => {
    expect(effectiveSchema({ properties: {} })).toEqual({ type: 'object', properties: {}, required: [], additionalProperties: false });
    expect(effectiveSchema({ type: 'object' })).toEqual({ type: 'object', properties: {}, required: [], additionalProperties: false });
    const written = { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] };
    expect(effectiveSchema(written)).toEqual({ ...written, additionalProperties: false });
  });
});
