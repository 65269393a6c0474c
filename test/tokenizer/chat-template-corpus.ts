/**
 * The chat-template corpus (test/fixtures/chat-templates): each template × conversation rendered
 * the way the chat route renders it (messages prepared by toTemplateMessages, variables by
 * chatTemplateVariables, ChatTemplate.render), next to transformers 5's reference with vLLM's
 * preparation (scripts/chat-template-corpus/build_references.py).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chatTemplateVariables, toTemplateMessages } from '../../src/http/chat-prompt.js';
import { ChatMessageSchema, ToolSchema } from '../../src/protocol/openai-chat.js';
import { ChatTemplate } from '../../src/tokenizer/chat-template.js';

export const CORPUS_DIR = join(import.meta.dirname, '../fixtures/chat-templates');

export interface CorpusConversation {
  name: string;
  messages: unknown[];
  tools?: unknown[];
  add_generation_prompt?: boolean;
  chat_template_kwargs?: Record<string, unknown>;
}

export type Outcome = { text: string } | { error: string };

export interface CorpusReferences {
  bosToken: string;
  eosToken: string;
  /** The clock strftime_now read (local time). */
  now: string;
  conversations: CorpusConversation[];
  templates: Record<string, { contentFormat: 'string' | 'openai'; outcomes: Record<string, Outcome> }>;
}

export function loadCorpus(): CorpusReferences {
  return JSON.parse(readFileSync(join(CORPUS_DIR, 'references.json'), 'utf8')) as CorpusReferences;
}

export function templateSource(name: string): string {
  return readFileSync(join(CORPUS_DIR, 'templates', name), 'utf8');
}

/** Our outcome for one pair: the rendered text, or the error the template raised (any error counts as the same outcome as Python's). */
export function renderPair(template: ChatTemplate, conversation: CorpusConversation): Outcome {
  try {
    const messages = conversation.messages.map((m) => ChatMessageSchema.parse(m));
    const tools = conversation.tools?.map((t) => ToolSchema.parse(t));
    const text = template.render(toTemplateMessages(messages), {
      addGenerationPrompt: conversation.add_generation_prompt ?? true,
      continueFinalMessage: false,
      kwargs: chatTemplateVariables({ tools, chat_template_kwargs: conversation.chat_template_kwargs }),
    });
    return { text };
  } catch (error) {
    return { error: error instanceof Error ? error.message : String(error) };
  }
}

export function sameOutcome(ours: Outcome, reference: Outcome): boolean {
  if ('error' in reference) return 'error' in ours;
  return 'text' in ours && ours.text === reference.text;
}
