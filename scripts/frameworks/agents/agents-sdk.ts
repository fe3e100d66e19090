import { Agent, run, setTracingDisabled, tool, setOpenAIAPI, setDefaultOpenAIClient } from '@openai/agents';
import OpenAI from 'openai';
import { renderToolResult, type AgentArgs } from 'silo/agent';

setTracingDisabled(true);
setOpenAIAPI('chat_completions');

export default async function agent({ instruction, tools, callTool, signal }: AgentArgs) {
  setDefaultOpenAIClient(new OpenAI({ baseURL: process.env.OPENAI_BASE_URL, apiKey: process.env.OPENAI_API_KEY }));
  const bot = new Agent({
    name: 'support',
    model: 'gpt-4o-mini',
    tools: tools.map((t) => tool({ name: t.name, description: t.description, parameters: t.inputSchema, strict: false, execute: async (input) => renderToolResult(await callTool(t.name, input)) })),
  });
  const result = await run(bot, instruction, { signal });
  return result.finalOutput ?? null;
}
