/**
 * `silo/agent`: what an agent module imports from Silo, and nothing else (an agent's worker loads
 * it, so it stays light): the converters from Silo's tool schemas to each protocol's tools, and
 * the agent's types.
 */
export { renderToolResult, toAnthropicTools, toMcpTools, toOpenAITools } from './agents/converters.js';
export type { AnthropicTool, McpTool, OpenAITool } from './agents/converters.js';
export type { AgentArgs, AgentOptions, ToolInputSchema, ToolResult, ToolSchema } from './types.js';
