/**
 * The saved validator of the draft-07 meta-schema (src/rollout/meta-schema.ts, written by
 * scripts/gen-meta-schema.mjs): it must be what the installed ajv makes, and judge schemas as
 * ajv's own validateSchema does, errors included (schemaProblem's sentences are built from them).
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import validateMetaSchema from '../../src/rollout/meta-schema.js';

const addFormats = addFormatsModule as unknown as (ajv: Ajv) => Ajv;
const saved = validateMetaSchema as unknown as ((schema: unknown) => boolean) & { errors?: unknown[] | null };

describe('the saved meta-schema validator', () => {
  it('is what scripts/gen-meta-schema.mjs makes with the ajv installed (run it after upgrading ajv)', async () => {
    const printed = await new Promise<string>((resolve, reject) =>
      execFile(process.execPath, ['scripts/gen-meta-schema.mjs', '--print'], { maxBuffer: 2 ** 24 }, (err, stdout) => (err ? reject(err) : resolve(stdout))),
    );
    expect(readFileSync('src/rollout/meta-schema.ts', 'utf8')).toBe(printed);
  });

  it.each([
    { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'], additionalProperties: false },
    { type: 'objekt' },
    { type: ['string', 'nul'] },
    { type: 'object', required: 'id' },
    { type: 'object', properties: { n: { type: 'integer', minimum: 'zero' } } },
    { type: 'object', properties: { s: { type: 'string', minLength: -1, format: 'email' } } },
    { type: 'object', required: [1], properties: { a: { enum: 3 } } },
    { type: 'object', properties: { a: { anyOf: [] } } },
    { type: 'object', properties: { a: { enum: ['x', 'x'] } }, dependencies: { a: 3 } },
    { $id: 'not a uri', $ref: 7, items: [true, 'no'] },
  ])('judges %j as ajv does, with the same errors', (schema) => {
    const ajv = new Ajv({ allErrors: true, strict: false });
    addFormats(ajv);
    const valid = ajv.validateSchema(schema);
    expect(saved(schema)).toBe(valid);
    expect(saved.errors ?? null).toEqual(ajv.errors ?? null);
  });
});
