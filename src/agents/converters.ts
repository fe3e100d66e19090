/**
 * Tool schemas in the shapes model APIs take, and tool results as text a model reads. For
 * people's own agents (exported from the package) and for the built-in ones. Pure functions:
 * they run in agent workers too.
 */
import type { JsonSchema, ToolResult, ToolSchema } from '../types.js';

/** A tool as the OpenAI Chat Completions API takes it (`tools` of a request). */
export interface OpenAITool {
  type: 'function';
  function: { name: string; description: string; parameters: JsonSchema };
}

/** A tool as the Anthropic Messages API takes it (`tools` of a request). */
export interface AnthropicTool {
  name: string;
  description: string;
  input_schema: JsonSchema & { type: 'object' };
}

/** A tool as an MCP server lists it (`tools/list`). */
export interface McpTool {
  name: string;
  description: string;
  inputSchema: JsonSchema & { type: 'object' };
}

/** Silo's tool schemas as OpenAI Chat Completions function tools. */
export function toOpenAITools(tools: readonly ToolSchema[]): OpenAITool[] {
  return tools.map((t) => ({ type: 'function', function: { name: t.name, description: t.description, parameters: objectSchema(t.inputSchema) } }));
}

/** Silo's tool schemas as Anthropic Messages tools. */
export function toAnthropicTools(tools: readonly ToolSchema[]): AnthropicTool[] {
  return tools.map((t) => ({ name: t.name, description: t.description, input_schema: objectSchema(t.inputSchema) }));
}

/** Silo's tool schemas as MCP tools. */
export function toMcpTools(tools: readonly ToolSchema[]): McpTool[] {
  return tools.map((t) => ({ name: t.name, description: t.description, inputSchema: objectSchema(t.inputSchema) }));
}

/**
 * A tool result as text for a model: a successful value as JSON (a string value as it is), a
 * failure as `Error (<code>): <message>`, the message being Silo's own (it names the real tools
 * or parameters), so the model can correct its call.
 */
export function renderToolResult(result: ToolResult): string {
  if (result.ok) {
    if (typeof result.value === 'string') return result.value;
    return JSON.stringify(result.value ?? null) ?? 'null';
  }
  return `Error (${result.error.code}): ${result.error.message}`;
}

/**
 * Every protocol wants an object schema at the top. Silo's schemas are objects already; one
 * without `type` gets `type: "object"`. The schema is copied, never shared with the caller's.
 */
function objectSchema(schema: JsonSchema): JsonSchema & { type: 'object' } {
  const copy = structuredClone(schema) as Record<string, unknown>;
  return (copy.type === undefined ? { ...copy, type: 'object' } : copy) as JsonSchema & { type: 'object' };
}
