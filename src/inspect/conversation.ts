/**
 * The model's side of a run, read back from models.jsonl: the messages of each request that the
 * previous request did not already hold, then the model's answer (its text and the tools it
 * called), for the OpenAI Chat Completions and Responses protocols and Anthropic Messages, whole
 * or streamed. What `silo show` and the report print as the conversation.
 */
import { existsSync, readFileSync } from 'node:fs';

/** One line of models.jsonl, as read back (see src/gateway/record.ts). */
export interface ModelLine {
  requestId: number;
  seq?: number;
  actor?: string;
  provider?: string;
  endpoint?: string;
  model?: string | null;
  stream?: boolean;
  status?: number | null;
  request?: unknown;
  response?: unknown;
  requestTruncated?: boolean;
  responseTruncated?: boolean;
  bodiesOmitted?: string;
  cached?: boolean;
  error?: string;
}

/** A message of the conversation. */
export interface ConversationMessage {
  /** `assistant` is the model; `tool` a tool result fed back; `user` and `system` the prompts. */
  role: string;
  text: string;
  /** The model request that sent it (or, for `assistant`, that answered it). */
  requestId: number;
}

/** Reads a run's models.jsonl (a torn last line is skipped); none when the run has no model calls. */
export function readModelLines(file: string): ModelLine[] {
  if (!existsSync(file)) return [];
  const lines: ModelLine[] = [];
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (line.trim() === '') continue;
    try {
      const parsed = JSON.parse(line) as ModelLine;
      if (typeof parsed === 'object' && parsed !== null && typeof parsed.requestId === 'number') lines.push(parsed);
    } catch {
      // a partial line from a crash
    }
  }
  return lines;
}

type Json = Record<string, unknown>;
const obj = (v: unknown): Json | null => (typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Json) : null);
const arr = (v: unknown): unknown[] => (Array.isArray(v) ? v : []);
const str = (v: unknown): string => (typeof v === 'string' ? v : v === undefined || v === null ? '' : JSON.stringify(v));

/** A tool call as a line: `→ name({"a":1})`. */
const toolCall = (name: unknown, args: unknown): string => `→ ${str(name)}(${typeof args === 'string' ? args : JSON.stringify(args ?? {})})`;

/** The text of a message's content in any of the protocols' shapes. */
function contentText(content: unknown): string {
  if (typeof content === 'string') return content;
  return arr(content)
    .map((part) => {
      const p = obj(part);
      if (!p) return str(part);
      if (typeof p.text === 'string') return p.text;
      if (p.type === 'tool_use') return toolCall(p.name, p.input);
      if (p.type === 'tool_result') return contentText(p.content);
      if (p.type === 'image' || p.type === 'image_url' || p.type === 'input_image') return '[image]';
      return '';
    })
    .filter((t) => t !== '')
    .join('\n');
}

/** The messages a request sends, in order, each as role and text. */
function requestMessages(line: ModelLine): { role: string; text: string }[] {
  const body = obj(line.request);
  if (!body) return [];
  const out: { role: string; text: string }[] = [];
  if (line.endpoint === 'messages') {
    const system = contentText(body.system);
    if (system) out.push({ role: 'system', text: system });
  }
  if (line.endpoint === 'responses') {
    if (typeof body.instructions === 'string') out.push({ role: 'system', text: body.instructions });
    if (typeof body.input === 'string') return [...out, { role: 'user', text: body.input }];
    for (const item of arr(body.input)) {
      const i = obj(item);
      if (!i) continue;
      if (i.type === 'function_call') out.push({ role: 'assistant', text: toolCall(i.name, i.arguments) });
      else if (i.type === 'function_call_output') out.push({ role: 'tool', text: str(i.output) });
      else out.push({ role: str(i.role) || 'user', text: contentText(i.content) });
    }
    return out;
  }
  for (const message of arr(body.messages)) {
    const m = obj(message);
    if (!m) continue;
    const calls = arr(m.tool_calls).map((c) => {
      const f = obj(obj(c)?.function);
      return toolCall(f?.name, f?.arguments);
    });
    const text = [contentText(m.content), ...calls].filter((t) => t !== '').join('\n');
    // An Anthropic tool result travels in a user message: it is a tool's word, not the user's.
    const role = m.role === 'user' && arr(m.content).some((p) => obj(p)?.type === 'tool_result') ? 'tool' : str(m.role);
    out.push({ role, text });
  }
  return out;
}

/** The data of each event of a recorded stream. */
function streamEvents(text: string): Json[] {
  const events: Json[] = [];
  for (const block of text.split(/\r?\n\r?\n/)) {
    const data = block
      .split(/\r?\n/)
      .filter((l) => l.startsWith('data:'))
      .map((l) => l.slice(l.startsWith('data: ') ? 6 : 5))
      .join('\n');
    if (data === '' || data === '[DONE]') continue;
    try {
      const parsed = obj(JSON.parse(data));
      if (parsed) events.push(parsed);
    } catch {
      // a cut event
    }
  }
  return events;
}

/** The model's answer: its text and the tools it called. */
function responseText(line: ModelLine): string {
  const r = line.response;
  if (typeof r === 'string' && line.stream) return streamedText(line.endpoint, streamEvents(r));
  const body = obj(r);
  if (!body) return typeof r === 'string' ? r : '';
  if (obj(body.error)) return `(error) ${str(obj(body.error)!.message)}`;
  if (line.endpoint === 'messages') return contentText(body.content);
  if (line.endpoint === 'responses') return outputText(body.output);
  if (line.endpoint === 'models') return '';
  const message = obj(obj(arr(body.choices)[0])?.message);
  if (!message) return '';
  return [contentText(message.content), ...arr(message.tool_calls).map((c) => toolCall(obj(obj(c)?.function)?.name, obj(obj(c)?.function)?.arguments))].filter((t) => t !== '').join('\n');
}

function outputText(output: unknown): string {
  return arr(output)
    .map((item) => {
      const i = obj(item);
      if (i?.type === 'message') return contentText(i.content);
      if (i?.type === 'function_call') return toolCall(i.name, i.arguments);
      return '';
    })
    .filter((t) => t !== '')
    .join('\n');
}

function streamedText(endpoint: string | undefined, events: Json[]): string {
  if (endpoint === 'responses') {
    const done = events.find((e) => e.type === 'response.completed' || e.type === 'response.incomplete');
    if (done) return outputText(obj(done.response)?.output);
    return events.filter((e) => e.type === 'response.output_text.delta').map((e) => str(e.delta)).join('');
  }
  if (endpoint === 'messages') {
    const blocks: string[] = [];
    const tools = new Map<number, { name: unknown; input: string }>();
    for (const e of events) {
      const index = typeof e.index === 'number' ? e.index : 0;
      const block = obj(e.content_block);
      const delta = obj(e.delta);
      if (e.type === 'content_block_start' && block?.type === 'tool_use') tools.set(index, { name: block.name, input: '' });
      else if (e.type === 'content_block_start') blocks[index] = str(block?.text);
      else if (e.type === 'content_block_delta' && delta?.type === 'input_json_delta') {
        const tool = tools.get(index);
        if (tool) tool.input += str(delta.partial_json);
      } else if (e.type === 'content_block_delta') blocks[index] = (blocks[index] ?? '') + str(delta?.text);
    }
    for (const [index, tool] of tools) blocks[index] = toolCall(tool.name, tool.input || '{}');
    return blocks.filter((b) => b !== undefined && b !== '').join('\n');
  }
  let text = '';
  const calls = new Map<number, { name: string; args: string }>();
  for (const e of events) {
    const delta = obj(obj(arr(e.choices)[0])?.delta);
    if (!delta) continue;
    text += str(delta.content);
    for (const c of arr(delta.tool_calls)) {
      const call = obj(c);
      const index = typeof call?.index === 'number' ? call.index : 0;
      const f = obj(call?.function);
      const known = calls.get(index) ?? { name: '', args: '' };
      known.name += str(f?.name);
      known.args += str(f?.arguments);
      calls.set(index, known);
    }
  }
  return [text, ...[...calls.values()].map((c) => toolCall(c.name, c.args))].filter((t) => t !== '').join('\n');
}

/**
 * The conversation of one actor's model calls: each request's new messages, then its answer. A
 * request that does not continue the previous one (the agent rewrote its history, or talks to two
 * models) is shown whole.
 */
export function conversationOf(lines: readonly ModelLine[], actor = 'agent'): ConversationMessage[] {
  const out: ConversationMessage[] = [];
  let previous = 0;
  for (const line of lines) {
    if ((line.actor ?? 'agent') !== actor || line.endpoint === 'models') continue;
    if (line.bodiesOmitted) {
      out.push({ role: 'note', text: `request ${line.requestId}: bodies not kept (${line.bodiesOmitted})`, requestId: line.requestId });
      previous = 0;
      continue;
    }
    const messages = requestMessages(line);
    const fresh = messages.length >= previous + 1 && previous > 0 ? messages.slice(previous + 1) : messages;
    for (const m of fresh) out.push({ ...m, requestId: line.requestId });
    if (line.requestTruncated) out.push({ role: 'note', text: `request ${line.requestId} was cut at 1 MiB in models.jsonl`, requestId: line.requestId });
    const answer = line.status !== null && line.status !== undefined && line.status >= 400 ? `(HTTP ${line.status}) ${responseText(line) || line.error || ''}`.trim() : responseText(line);
    out.push({ role: 'assistant', text: answer || (line.error ? `(no answer: ${line.error})` : ''), requestId: line.requestId });
    previous = messages.length;
  }
  return out;
}
