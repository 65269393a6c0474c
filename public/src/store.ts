/** The form's state, remembered across visits in localStorage. */
import { isApiId, type ApiId } from './apis.js';
import type { RawValue } from './form-values.js';
import { PARAMS } from './params.js';
import type { ChatMessageDraft } from './request.js';
import { defaultWebLlmChoice, type WebLlmChoice } from './webllm-panel.js';

export type TargetId = 'server' | 'wasm' | 'webgpu' | 'webllm';

export interface PlaygroundState {
  api: ApiId;
  target: TargetId;
  model: string;
  prompt: string;
  messages: ChatMessageDraft[];
  stream: boolean;
  includeUsage: boolean;
  /** MindIE fullTextEnabled is a server setting: the page must know how to read the stream. */
  fullText: boolean;
  params: Record<string, RawValue>;
  /** The web-llm engine's model. */
  webllm: WebLlmChoice;
}

export const CHAT_ROLES = ['system', 'user', 'assistant'] as const;

export function defaultState(): PlaygroundState {
  const params: Record<string, RawValue> = {};
  for (const spec of PARAMS) params[spec.key] = spec.kind === 'bool' ? (spec.boolDefault ?? false) : '';
  params.max_tokens = '64';
  return {
    api: 'chat',
    target: 'server',
    model: '',
    prompt: 'Once upon a time, there was a little',
    messages: [{ role: 'user', content: 'Lily and Ben went to the park. They saw' }],
    stream: true,
    includeUsage: true,
    fullText: false,
    params,
    webllm: defaultWebLlmChoice(),
  };
}

const STORAGE_KEY = 'edge-llm.playground.v1';

/** The saved state merged onto the defaults; anything malformed falls back to its default. */
export function loadState(storage: Pick<Storage, 'getItem'> | undefined): PlaygroundState {
  const state = defaultState();
  let saved: unknown;
  try {
    saved = JSON.parse(storage?.getItem(STORAGE_KEY) ?? 'null');
  } catch {
    return state;
  }
  if (typeof saved !== 'object' || saved === null) return state;
  const s = saved as Partial<Record<keyof PlaygroundState, unknown>>;
  if (isApiId(s.api)) state.api = s.api;
  if (s.target === 'server' || s.target === 'wasm' || s.target === 'webgpu' || s.target === 'webllm') state.target = s.target;
  const webllm = s.webllm as Partial<Record<string, unknown>> | undefined;
  for (const key of ['model', 'modelUrl', 'modelLibUrl'] as const) {
    if (typeof webllm?.[key] === 'string') state.webllm[key] = webllm[key] as string;
  }
  if (typeof s.model === 'string') state.model = s.model;
  if (typeof s.prompt === 'string') state.prompt = s.prompt;
  if (Array.isArray(s.messages) && s.messages.every((m) => typeof m?.role === 'string' && typeof m?.content === 'string')) {
    state.messages = (s.messages as ChatMessageDraft[]).map((m) => ({ role: m.role, content: m.content }));
  }
  for (const flag of ['stream', 'includeUsage', 'fullText'] as const) {
    if (typeof s[flag] === 'boolean') state[flag] = s[flag];
  }
  if (typeof s.params === 'object' && s.params !== null) {
    for (const spec of PARAMS) {
      const value = (s.params as Record<string, unknown>)[spec.key];
      if (spec.kind === 'bool' ? typeof value === 'boolean' : typeof value === 'string') state.params[spec.key] = value as RawValue;
    }
  }
  return state;
}

export function saveState(storage: Pick<Storage, 'setItem'> | undefined, state: PlaygroundState): void {
  try {
    storage?.setItem(STORAGE_KEY, JSON.stringify(state));
  } catch {
    // Storage full or disabled (private mode): the page works without it.
  }
}
