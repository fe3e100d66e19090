import { describe, expect, it } from 'vitest';
import { renderToolResult, toAnthropicTools, toMcpTools, toOpenAITools, type ToolInputSchema, type ToolSchema } from '../../src/index.js';

const tools: ToolSchema[] = [
  {
    name: 'get_ticket',
    description: 'Get one ticket by id.',
    inputSchema: { type: 'object', properties: { ticket_id: { type: 'string' } }, required: ['ticket_id'], additionalProperties: false },
  },
  // No `type` (a hand-made ToolSchema; agents always get it filled in): every protocol wants an
  // object schema at the top.
  { name: 'ping', description: 'Ping.', inputSchema: { properties: {} } as unknown as ToolInputSchema },
];

describe('toOpenAITools', () => {
  it('makes each tool a Chat Completions function tool with the schema as parameters', () => {
    expect(toOpenAITools(tools)).toEqual([
      { type: 'function', function: { name: 'get_ticket', description: 'Get one ticket by id.', parameters: tools[0]!.inputSchema } },
      { type: 'function', function: { name: 'ping', description: 'Ping.', parameters: { type: 'object', properties: {} } } },
    ]);
  });
});

describe('toAnthropicTools', () => {
  it('makes each tool a Messages tool with the schema as input_schema', () => {
    expect(toAnthropicTools(tools)).toEqual([
      { name: 'get_ticket', description: 'Get one ticket by id.', input_schema: tools[0]!.inputSchema },
      { name: 'ping', description: 'Ping.', input_schema: { type: 'object', properties: {} } },
    ]);
  });
});

describe('toMcpTools', () => {
  it('makes each tool an MCP tool with the schema as inputSchema', () => {
    expect(toMcpTools(tools)).toEqual([
      { name: 'get_ticket', description: 'Get one ticket by id.', inputSchema: tools[0]!.inputSchema },
      { name: 'ping', description: 'Ping.', inputSchema: { type: 'object', properties: {} } },
    ]);
  });
});

describe('every converter', () => {
  it.each([toOpenAITools, toAnthropicTools, toMcpTools])('copies the schemas: changing the output leaves the input alone (%o)', (convert) => {
    const before = structuredClone(tools);
    const converted = JSON.stringify(convert(tools));
    for (const t of convert(tools) as unknown as Record<string, any>[]) {
      const schema = t.function?.parameters ?? t.input_schema ?? t.inputSchema;
      schema.properties.injected = { type: 'number' };
    }
    expect(tools).toEqual(before);
    expect(JSON.stringify(convert(tools))).toBe(converted);
  });
});

describe('renderToolResult', () => {
  it('renders a value as JSON and a string value as it is', () => {
    expect(renderToolResult({ ok: true, value: { id: 't1', tags: ['a'] } })).toBe('{"id":"t1","tags":["a"]}');
    expect(renderToolResult({ ok: true, value: 'closed' })).toBe('closed');
    expect(renderToolResult({ ok: true, value: 3 })).toBe('3');
    expect(renderToolResult({ ok: true, value: null })).toBe('null');
  });

  it("renders a failure as its code and Silo's message, which says how to correct the call", () => {
    const message = "no tool named 'get_tikcet'. Available tools, nearest first: get_ticket, ping";
    expect(renderToolResult({ ok: false, error: { code: 'tool_not_found', message, available: ['get_ticket', 'ping'] } })).toBe(
      `Error (tool_not_found): ${message}`,
    );
  });
});
