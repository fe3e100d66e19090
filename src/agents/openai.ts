/**
 * The built-in agent `--agent openai:<model>`: the OpenAI Chat Completions protocol, so any
 * compatible server (OpenAI, vLLM, Ollama, llama.cpp) works. It reaches its model through Silo's
 * gateway: OPENAI_BASE_URL and OPENAI_API_KEY are the gateway's URL and the rollout's token (the
 * gateway retries, records each call and its usage, and holds the real key). The loop: the instruction
 * as the prompt, the tools as function tools, every tool call of a response executed (in
 * parallel), the results fed back (failures too, so the model can correct itself), until a
 * reply without tool calls, the signal, or maxTurns. With a user (`args.user`), a reply without tool
 * calls is sent to the user and the loop goes on with their answer until the user ends the conversation. An ordinary agent module: it runs in a worker.
 */
import OpenAI from 'openai';
import type { ChatCompletionMessageParam, ChatCompletionToolMessageParam } from 'openai/resources/chat/completions';
import type { AgentArgs } from '../types.js';
import { renderToolResult, toOpenAITools } from './converters.js';
import { agentSettings, CONVERSATION_PROMPT, parseArguments, SYSTEM_PROMPT, talk } from './settings.js';

export default async function openaiAgent({ instruction, tools, callTool, signal, log, options, user }: AgentArgs): Promise<string> {
  const { model, maxTurns } = agentSettings(options);
  const client = new OpenAI({
    baseURL: process.env.OPENAI_BASE_URL ?? null,
    apiKey: process.env.OPENAI_API_KEY ?? 'not-set',
    // The gateway retries (and records each try); the SDK must not multiply them.
    maxRetries: 0,
  });
  const functions = toOpenAITools(tools);
  const messages: ChatCompletionMessageParam[] = [
    { role: 'system', content: user ? CONVERSATION_PROMPT : SYSTEM_PROMPT },
    { role: 'user', content: instruction },
  ];

  for (let turn = 1; turn <= maxTurns; turn++) {
    signal.throwIfAborted();
    // Each request is a model_call event in the trace (the gateway records it, with its usage).
    const response = await client.chat.completions.create({ model, messages, ...(functions.length > 0 ? { tools: functions } : {}) }, { signal });
    const choice = response.choices[0];
    if (!choice) throw new Error(`the model returned no choices (turn ${turn})`);
    const { message } = choice;
    const calls = message.tool_calls ?? [];
    if (calls.length === 0) {
      // With a user, a text reply is a message to them; their answer is the next user turn.
      const text = message.content ?? '';
      const reply = await talk(user, text);
      if (reply === null) return text;
      messages.push({ role: 'assistant', content: text }, { role: 'user', content: reply });
      continue;
    }

    messages.push({ role: 'assistant', content: message.content ?? null, tool_calls: calls });
    // Every call of the response at once: the host runs them in the order they arrive.
    const results = await Promise.all(
      calls.map(async (call): Promise<ChatCompletionToolMessageParam> => {
        if (call.type !== 'function') return { role: 'tool', tool_call_id: call.id, content: `Error (tool_not_found): only function tools exist here` };
        const args = parseArguments(call.function.arguments);
        if (!args.ok) {
          log(`the model sent ${call.function.name} arguments that are not JSON`, { arguments: call.function.arguments.slice(0, 2_000) });
          return { role: 'tool', tool_call_id: call.id, content: args.message };
        }
        return { role: 'tool', tool_call_id: call.id, content: renderToolResult(await callTool(call.function.name, args.input)) };
      }),
    );
    messages.push(...results);
  }
  throw new Error(`no final answer after ${maxTurns} model turns (maxTurns; raise it with --max-turns)`);
}
