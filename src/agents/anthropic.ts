/**
 * The built-in agent `--agent anthropic:<model>`: the Anthropic Messages protocol. It reaches its
 * model through Silo's gateway: ANTHROPIC_BASE_URL and ANTHROPIC_API_KEY are the gateway's URL and
 * the rollout's token (the gateway retries, records each call and its usage, holds the key). The
 * loop: the instruction as the prompt, the tools as Messages tools, every tool_use block of a
 * response executed (in parallel), the results fed back as tool_result blocks (failures marked
 * is_error, so the model can correct itself), until a reply without tool use, the signal, or
 * maxTurns. With a user (`args.user`), a reply without tool use is sent to the
 * user and the loop goes on with their answer until the user ends the conversation. An ordinary agent module: it runs in a worker.
 */
import Anthropic from '@anthropic-ai/sdk';
import type { MessageParam, ToolResultBlockParam, ToolUseBlock } from '@anthropic-ai/sdk/resources/messages';
import type { AgentArgs } from '../types.js';
import { renderToolResult, toAnthropicTools } from './converters.js';
import { agentSettings, CONVERSATION_PROMPT, SYSTEM_PROMPT, talk } from './settings.js';

export default async function anthropicAgent({ instruction, tools, callTool, signal, options, user }: AgentArgs): Promise<string> {
  const { model, maxTurns, maxTokens } = agentSettings(options);
  const client = new Anthropic({
    baseURL: process.env.ANTHROPIC_BASE_URL ?? null,
    apiKey: process.env.ANTHROPIC_API_KEY ?? 'not-set',
    // The gateway retries (and records each try); the SDK must not multiply them.
    maxRetries: 0,
  });
  const schemas = toAnthropicTools(tools);
  const messages: MessageParam[] = [{ role: 'user', content: instruction }];

  for (let turn = 1; turn <= maxTurns; turn++) {
    signal.throwIfAborted();
    // Each request is a model_call event in the trace (the gateway records it, with its usage).
    const response = await client.messages.create(
      { model, max_tokens: maxTokens, system: user ? CONVERSATION_PROMPT : SYSTEM_PROMPT, messages, ...(schemas.length > 0 ? { tools: schemas } : {}) },
      { signal },
    );
    const uses = response.content.filter((block): block is ToolUseBlock => block.type === 'tool_use');
    if (uses.length === 0) {
      const text = response.content.map((block) => (block.type === 'text' ? block.text : '')).join('');
      // With a user, a text reply is a message to them; their answer is the next user turn.
      const reply = await talk(user, text);
      if (reply === null) return text;
      messages.push({ role: 'assistant', content: response.content }, { role: 'user', content: reply });
      continue;
    }

    messages.push({ role: 'assistant', content: response.content });
    // Every call of the response at once: the host runs them in the order they arrive.
    const results = await Promise.all(
      uses.map(async (use): Promise<ToolResultBlockParam> => {
        const result = await callTool(use.name, use.input);
        return { type: 'tool_result', tool_use_id: use.id, content: renderToolResult(result), ...(result.ok ? {} : { is_error: true }) };
      }),
    );
    messages.push({ role: 'user', content: results });
  }
  throw new Error(`no final answer after ${maxTurns} model turns (maxTurns; raise it with --max-turns)`);
}
