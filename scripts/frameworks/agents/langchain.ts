import { ChatOpenAI } from '@langchain/openai';
import { tool } from '@langchain/core/tools';
import { HumanMessage, ToolMessage, type BaseMessage } from '@langchain/core/messages';
import { renderToolResult, type AgentArgs } from 'silo/agent';

export default async function agent({ instruction, tools, callTool, signal }: AgentArgs) {
  const lcTools = tools.map((t) => tool(async (input: unknown) => renderToolResult(await callTool(t.name, input)), { name: t.name, description: t.description, schema: t.inputSchema }));
  const model = new ChatOpenAI({ model: 'gpt-4o-mini', apiKey: process.env.OPENAI_API_KEY, configuration: { baseURL: process.env.OPENAI_BASE_URL } }).bindTools(lcTools);
  const messages: BaseMessage[] = [new HumanMessage(instruction)];
  for (let i = 0; i < 10; i++) {
    const reply = await model.invoke(messages, { signal });
    messages.push(reply);
    if (!reply.tool_calls?.length) return String(reply.content);
    for (const call of reply.tool_calls) {
      const t = lcTools.find((x) => x.name === call.name)!;
      messages.push(new ToolMessage({ tool_call_id: call.id!, content: String(await t.invoke(call.args)) }));
    }
  }
  return null;
}
