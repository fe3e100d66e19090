// An agent that asks a model, with the OpenAI SDK (`npm install openai`): the task's tools become
// function tools, every tool call the model makes is run through Silo and its result fed back,
// until the model answers without calling a tool. Any server that speaks the OpenAI Chat
// Completions protocol works (OpenAI, vLLM, Ollama, llama.cpp, LiteLLM).
import OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { renderToolResult, toOpenAITools, type AgentArgs } from 'silo/agent';

const MODEL = 'gpt-4o-mini';

export default async function agent({ instruction, tools, callTool, signal, log }: AgentArgs): Promise<string | null> {
  // Run it with `--provider openai`: the worker's environment then holds OPENAI_BASE_URL (Silo's
  // model gateway) and OPENAI_API_KEY (a token for this rollout only); your key stays with Silo.
  const client = new OpenAI();
  const messages: ChatCompletionMessageParam[] = [{ role: 'user', content: instruction }];
  for (let turn = 0; turn < 30; turn++) {
    const response = await client.chat.completions.create({ model: MODEL, messages, tools: toOpenAITools(tools) }, { signal });
    const message = response.choices[0]!.message;
    if (!message.tool_calls?.length) return message.content;
    messages.push(message);
    for (const call of message.tool_calls) {
      if (call.type !== 'function') continue;
      const result = await callTool(call.function.name, JSON.parse(call.function.arguments || '{}'));
      if (!result.ok) log(`${call.function.name} failed`, result.error);
      messages.push({ role: 'tool', tool_call_id: call.id, content: renderToolResult(result) });
    }
  }
  return null;
}
