import { createReactAgent } from '@langchain/langgraph/prebuilt';
import { ChatOpenAI } from '@langchain/openai';
import { tool } from '@langchain/core/tools';
import { renderToolResult, type AgentArgs } from 'silo/agent';

export default async function agent({ instruction, tools, callTool, signal }: AgentArgs) {
  const graph = createReactAgent({
    llm: new ChatOpenAI({ model: 'gpt-4o-mini' }),
    tools: tools.map((t) => tool(async (input: unknown) => renderToolResult(await callTool(t.name, input)), { name: t.name, description: t.description, schema: t.inputSchema })),
  });
  const state = await graph.invoke({ messages: [{ role: 'user', content: instruction }] }, { signal, recursionLimit: 20 });
  return String(state.messages.at(-1)?.content ?? '');
}
