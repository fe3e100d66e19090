/**
 * The schemas agents receive type-check where agent frameworks take a JSON Schema. The framework
 * types below restate the parameter types of the OpenAI Agents SDK (0.14, `tool({ parameters })`,
 * strict and not), the Vercel AI SDK (`jsonSchema()`, JSON Schema 7) and LangChain (`tool(fn, {
 * schema })`), which are not dependencies of this repository; tried for real from a project with
 * the packages installed.
 */
import { describe, expectTypeOf, it } from 'vitest';
import type { AgentArgs, ToolInputSchema } from '../src/index.js';

type AgentsSdkStrict = { type: 'object'; properties: Record<string, Record<string, any>>; required: string[]; additionalProperties: false; description?: string };
type AgentsSdkNonStrict = { type: 'object'; properties: Record<string, Record<string, any>>; required: string[]; additionalProperties: true; description?: string };
type JSONSchema7TypeName = 'string' | 'number' | 'integer' | 'boolean' | 'object' | 'array' | 'null';
interface JSONSchema7 {
  type?: JSONSchema7TypeName | JSONSchema7TypeName[];
  properties?: { [key: string]: JSONSchema7 | boolean };
  required?: string[];
  additionalProperties?: JSONSchema7 | boolean;
  description?: string;
}
type LangChainJsonSchema = Record<string, unknown>;

describe('ToolInputSchema', () => {
  it('is accepted as the OpenAI Agents SDK takes a tool schema, strict or not, without a cast', () => {
    expectTypeOf<ToolInputSchema>().toExtend<AgentsSdkStrict>();
    expectTypeOf<ToolInputSchema>().toExtend<AgentsSdkNonStrict>();
  });

  it('is a JSON Schema 7 (Vercel AI SDK) and a plain record (LangChain)', () => {
    expectTypeOf<ToolInputSchema>().toExtend<JSONSchema7>();
    expectTypeOf<ToolInputSchema>().toExtend<LangChainJsonSchema>();
  });

  it('is what an agent finds on its tools', () => {
    expectTypeOf<AgentArgs['tools'][number]['inputSchema']>().toEqualTypeOf<ToolInputSchema>();
  });
});
