import { generateText, jsonSchema, stepCountIs, tool } from 'ai';
import { createOpenAI } from '@ai-sdk/openai';
import { renderToolResult, type AgentArgs } from 'silo/agent';

export default async function agent({ instruction, tools, callTool, signal }: AgentArgs) {
  const openai = createOpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY });
  const result = await generateText({
    model: openai.chat('gpt-4o-mini'),
    prompt: instruction,
    abortSignal: signal,
    stopWhen: stepCountIs(10),
    tools: Object.fromEntries(tools.map((t) => [t.name, tool({ description: t.description, inputSchema: jsonSchema(t.inputSchema), execute: async (input) => renderToolResult(await callTool(t.name, input)) })])),
  });
  return result.text;
}
