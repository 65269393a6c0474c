/** The request the page sends: its body (in the parameter order a reader expects), JSON text and curl. */
import { APIS, type ApiId } from './apis.js';
import { toJsonValue, type RawValue } from './form-values.js';
import { paramsFor } from './params.js';

export interface ChatMessageDraft {
  role: string;
  content: string;
}

/** What the form holds for one request. */
export interface RequestDraft {
  api: ApiId;
  /** The `model` field: the served model for OpenAI (required), a LoRA id for /generate (optional). */
  model: string;
  prompt: string;
  messages: ChatMessageDraft[];
  stream: boolean;
  /** OpenAI streaming: ask for the final usage chunk (token counts for the metrics). */
  includeUsage: boolean;
  params: Record<string, RawValue>;
}

export function buildRequestBody(draft: RequestDraft): Record<string, unknown> {
  const body: Record<string, unknown> = {};
  const openai = APIS[draft.api].family === 'openai';
  if (openai || draft.model.trim() !== '') body.model = draft.model.trim();
  if (draft.api === 'chat') body.messages = draft.messages.map((m) => ({ role: m.role, content: m.content }));
  else body.prompt = draft.prompt;
  for (const spec of paramsFor(draft.api)) {
    const raw = draft.params[spec.key];
    if (raw === undefined) continue;
    const value = toJsonValue(spec.kind, raw, spec.boolDefault);
    if (value !== undefined) body[spec.key] = value;
  }
  if (draft.stream) {
    body.stream = true;
    if (openai && draft.includeUsage) body.stream_options = { include_usage: true };
  }
  return body;
}

/** JSON.stringify that writes bigints as plain integer literals (a uint64 seed stays exact). */
export function toJson(value: unknown, indent?: number): string {
  // Bigints travel as marked strings and are unquoted afterwards; the marker is chosen so
  // that it occurs nowhere else in the text, whatever the user typed.
  const plain = JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? String(v) : v));
  let mark = 'bigint';
  while (plain.includes(mark)) mark += '_';
  const text = JSON.stringify(value, (_key, v: unknown) => (typeof v === 'bigint' ? `${mark}${v}` : v), indent);
  return text.replace(new RegExp(`"${mark}(-?\\d+)"`, 'g'), '$1');
}

/** A POSIX shell word: single-quoted, with embedded single quotes closed, escaped and reopened. */
export function shellQuote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

export function curlCommand(baseUrl: string, api: ApiId, bodyJson: string, stream: boolean): string {
  const url = new URL(APIS[api].path, baseUrl).toString();
  const lines = [`curl${stream ? ' -N' : ''} ${shellQuote(url)}`, `-H 'Content-Type: application/json'`, `-d ${shellQuote(bodyJson)}`];
  return lines.join(' \\\n  ');
}

/**
 * What the curl tab says in in-page mode: the command reaches the server only when the
 * server serves the page's model (a .gguf picked in the page is not on the server).
 */
export function inPageCurlNote(pageModel: string | null, serverModel: string | null): string {
  if (pageModel !== null && serverModel !== null && pageModel !== serverModel) {
    return `In-page mode: this request runs inside this page on "${pageModel}", which the server does not serve (it serves "${serverModel}"): the command works against a server started with that model (npx edge-llm serve <its folder or .gguf>).`;
  }
  return 'In-page mode: this request runs inside this page, not over the network. The same command works against the server (npx edge-llm serve).';
}
