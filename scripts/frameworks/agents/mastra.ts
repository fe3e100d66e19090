import { Agent } from '@mastra/core/agent';
import { createTool } from '@mastra/core/tools';
import { createOpenAI } from '@ai-sdk/openai';
import { jsonSchema } from 'ai';
import { renderToolResult, type AgentArgs } from 'silo/agent';

export default async function agent({ instruction, tools, callTool, signal }: AgentArgs) {
  const openai = createOpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY });
  const bot = new Agent({
    name: 'support',
    instructions: 'You help with orders.',
    model: openai.chat('gpt-4o-mini'),
    tools: Object.fromEntries(tools.map((t) => [t.name, createTool({ id: t.name, description: t.description, inputSchema: jsonSchema(t.inputSchema) as never, execute: async ({ context }) => renderToolResult(await callTool(t.name, context)) })])),
  });
  const result = await bot.generate(instruction, { abortSignal: signal, maxSteps: 10 } as never);
  return result.text;
}
