/** The OpenAI-compatible request schemas (vLLM's protocol), one import for the serving layer. */
export * from './openai-common.js';
export * from './openai-completions.js';
export * from './openai-chat.js';
