/** The conversation read back from models.jsonl, in each protocol, whole and streamed. */
import { describe, expect, it } from 'vitest';
import { conversationOf, type ModelLine } from '../../src/inspect/conversation.js';
import { anthropicStream, openaiStream, responsesStream } from '../agents/model-server.js';

const texts = (lines: ModelLine[]): string[] => conversationOf(lines).map((m) => `${m.role}: ${m.text}`);
const streamText = (chunks: (string | (() => Promise<void>))[]): string => chunks.filter((c): c is string => typeof c === 'string').join('');

describe('conversationOf', () => {
  it('reads Anthropic Messages: the system prompt, tool use, tool results as the tool’s word, a streamed answer', () => {
    const lines: ModelLine[] = [
      {
        requestId: 1,
        endpoint: 'messages',
        status: 200,
        request: { system: 'Be brief.', messages: [{ role: 'user', content: 'Count.' }] },
        response: { content: [{ type: 'text', text: 'Counting.' }, { type: 'tool_use', id: 'u1', name: 'increment', input: {} }] },
      },
      {
        requestId: 2,
        endpoint: 'messages',
        status: 200,
        stream: true,
        request: {
          system: 'Be brief.',
          messages: [
            { role: 'user', content: 'Count.' },
            { role: 'assistant', content: [{ type: 'tool_use', id: 'u1', name: 'increment', input: {} }] },
            { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'u1', content: '1' }] },
          ],
        },
        response: streamText(anthropicStream({ pieces: ['It is ', '1.'], usage: { input: 1, output: 1 } }).chunks),
      },
    ];
    expect(texts(lines)).toEqual(['system: Be brief.', 'user: Count.', 'assistant: Counting.\n→ increment({})', 'tool: 1', 'assistant: It is 1.']);
  });

  it('reads the Responses API, whole and streamed, and Chat Completions streams with tool calls', () => {
    const chatStream = streamText(openaiStream({ method: 'POST', path: '', headers: {}, body: {} }, { toolCall: { id: 'c1', name: 'get', args: { id: 7 } }, usage: { prompt: 1, completion: 1 } }).chunks);
    const lines: ModelLine[] = [
      {
        requestId: 1,
        endpoint: 'responses',
        status: 200,
        request: { instructions: 'Sys.', input: 'Hi.' },
        response: { output: [{ type: 'function_call', name: 'look', arguments: '{"q":1}' }] },
      },
      { requestId: 2, endpoint: 'responses', status: 200, stream: true, request: { input: [{ type: 'function_call_output', output: 'found' }] }, response: streamText(responsesStream({ pieces: ['Do', 'ne'], usage: { input: 1, output: 1 } }).chunks) },
      { requestId: 3, endpoint: 'chat/completions', status: 200, stream: true, request: { messages: [{ role: 'user', content: 'Get 7.' }] }, response: chatStream },
    ];
    expect(texts(lines)).toEqual(['system: Sys.', 'user: Hi.', 'assistant: → look({"q":1})', 'tool: found', 'assistant: Done', 'user: Get 7.', 'assistant: → get({"id":7})']);
  });

  it('says what it cannot show: a refused or failed request, bodies left out, a request cut short', () => {
    const lines: ModelLine[] = [
      { requestId: 1, endpoint: 'chat/completions', status: 403, request: { messages: [{ role: 'user', content: 'more' }] }, response: null, error: 'model request refused: maxModelRequests' },
      { requestId: 2, endpoint: 'chat/completions', status: null, bodiesOmitted: 'too much' },
      { requestId: 3, endpoint: 'chat/completions', status: 200, requestTruncated: true, request: '{"messages":[', response: { choices: [{ message: { content: 'ok' } }] } },
    ];
    expect(texts(lines)).toEqual([
      'user: more',
      'assistant: (HTTP 403) model request refused: maxModelRequests',
      'note: request 2: bodies not kept (too much)',
      'note: request 3 was cut at 1 MiB in models.jsonl',
      'assistant: ok',
    ]);
  });
});
