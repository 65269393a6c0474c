/** The three APIs the playground can call, all served by the same app. */
export type ApiId = 'chat' | 'completions' | 'generate';

/** MindIE's /generate and vLLM's OpenAI-compatible endpoints differ in ranges and defaults. */
export type ApiFamily = 'openai' | 'mindie';

export interface ApiInfo {
  id: ApiId;
  path: string;
  /** Tab label. */
  label: string;
  family: ApiFamily;
  /** One line for the tab's tooltip and the docs. */
  summary: string;
}

export const APIS: Record<ApiId, ApiInfo> = {
  chat: {
    id: 'chat',
    path: '/v1/chat/completions',
    label: 'Chat',
    family: 'openai',
    summary: 'OpenAI / vLLM chat completions: a list of messages rendered with the model’s chat template.',
  },
  completions: {
    id: 'completions',
    path: '/v1/completions',
    label: 'Completions',
    family: 'openai',
    summary: 'OpenAI / vLLM text completions: the model continues the prompt.',
  },
  generate: {
    id: 'generate',
    path: '/generate',
    label: 'MindIE /generate',
    family: 'mindie',
    summary: 'MindIE’s text / streaming inference API (vLLM 0.6.4 legacy format).',
  },
};

export const API_IDS = Object.keys(APIS) as ApiId[];

export function isApiId(value: unknown): value is ApiId {
  return typeof value === 'string' && value in APIS;
}
