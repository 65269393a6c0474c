/**
 * Stored responses for `previous_response_id` and `GET /v1/responses/{id}`: each response
 * with the conversation it ended (its input turns and its output as chat messages).
 *
 * vLLM keeps them in unbounded dicts behind VLLM_ENABLE_RESPONSES_API_STORE (off by
 * default: `store` is then silently ignored and every previous_response_id is a 404). Here
 * they are kept by default, as OpenAI does, in this process's memory with a bound: at most
 * MAX_STORED_RESPONSES responses and MAX_STORED_CHARS characters of JSON in all, the least
 * recently used dropped first. A response larger than the whole budget is not kept. They do
 * not survive a restart and are not shared between processes (DATA_PARALLEL_SIZE) or Worker
 * isolates: a previous_response_id another process made is a 404 there.
 */
import type { ChatMessageBody } from '../../protocol/openai-responses/to-chat.js';
import type { ResponseObject } from './serving-responses.js';

export const MAX_STORED_RESPONSES = 256;
export const MAX_STORED_CHARS = 16 * 1024 * 1024;

export interface StoredResponse {
  response: ResponseObject;
  /** The conversation up to and including this response's output, without instructions (they never carry over). */
  messages: ChatMessageBody[];
}

export class ResponseStore {
  private readonly entries = new Map<string, { stored: StoredResponse; chars: number }>();
  private chars = 0;

  constructor(
    private readonly maxEntries = MAX_STORED_RESPONSES,
    private readonly maxChars = MAX_STORED_CHARS,
  ) {}

  get(id: string): StoredResponse | undefined {
    const entry = this.entries.get(id);
    if (entry === undefined) return undefined;
    // Most recently used last: eviction takes from the front.
    this.entries.delete(id);
    this.entries.set(id, entry);
    return entry.stored;
  }

  put(stored: StoredResponse): void {
    const chars = JSON.stringify(stored).length;
    if (chars > this.maxChars) return;
    this.delete(stored.response.id);
    this.entries.set(stored.response.id, { stored, chars });
    this.chars += chars;
    for (const [id, entry] of this.entries) {
      if (this.entries.size <= this.maxEntries && this.chars <= this.maxChars) break;
      this.entries.delete(id);
      this.chars -= entry.chars;
    }
  }

  delete(id: string): boolean {
    const entry = this.entries.get(id);
    if (entry === undefined) return false;
    this.entries.delete(id);
    this.chars -= entry.chars;
    return true;
  }

  get size(): number {
    return this.entries.size;
  }
}

/** The assistant message a response's output adds to the conversation. */
export function outputMessage(response: ResponseObject): ChatMessageBody | null {
  const message: ChatMessageBody = { role: 'assistant' };
  const calls: unknown[] = [];
  for (const item of response.output) {
    if (item.type === 'message') message.content = item.content.map((part) => part.text).join('');
    else if (item.type === 'function_call') calls.push({ id: item.call_id, type: 'function', function: { name: item.name, arguments: item.arguments } });
    else message.reasoning = item.content.map((part) => part.text).join('');
  }
  if (calls.length > 0) message.tool_calls = calls;
  return Object.keys(message).length > 1 ? message : null;
}
