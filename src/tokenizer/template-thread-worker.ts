/**
 * The template thread (node-template-thread.ts starts it): renders one chat template job per
 * message with ChatTemplate, exactly as the main thread would, keeping the last few templates
 * it compiled (the model's, and requests' own: a long one is parsed here, not on the loop).
 * Bundled beside the server as template-thread-worker.js.
 */
import { parentPort } from 'node:worker_threads';
import { ChatTemplate, ChatTemplateError } from './chat-template.js';
import type { TemplateRenderJob } from './template-thread.js';

export type TemplateThreadMessage = { id: number } & TemplateRenderJob;
export type TemplateThreadReply =
  | { id: number; text: string }
  /**
   * `syntax`: the source does not parse; `render`: a ChatTemplateError (the conversation's or
   * the template's fault), with the bound that stopped it if any; `internal`: anything else.
   */
  | { id: number; error: string; kind: 'syntax' | 'render' | 'internal'; budgetBound?: ChatTemplateError['budgetBound'] };

class SyntaxFailure extends Error {}

/** Templates compiled, newest last: a request's own template seldom comes back, the model's always does. */
const compiled = new Map<string, ChatTemplate>();
const KEPT_TEMPLATES = 8;

function templateFor(job: TemplateRenderJob): ChatTemplate {
  const key = `${job.bosToken}\u0000${job.eosToken}\u0000${JSON.stringify(job.otherTokens ?? {})}\u0000${job.source}`;
  let template = compiled.get(key);
  if (template === undefined) {
    try {
      template = new ChatTemplate(job.source, job.bosToken, job.eosToken, job.otherTokens);
    } catch (error) {
      throw new SyntaxFailure(error instanceof Error ? error.message : String(error));
    }
    if (compiled.size >= KEPT_TEMPLATES) compiled.delete(compiled.keys().next().value!);
  } else compiled.delete(key);
  compiled.set(key, template);
  return template;
}

parentPort?.on('message', (job: TemplateThreadMessage) => {
  let reply: TemplateThreadReply;
  try {
    reply = { id: job.id, text: templateFor(job).render(job.messages, job.options) };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    if (error instanceof SyntaxFailure) reply = { id: job.id, error: message, kind: 'syntax' };
    else if (error instanceof ChatTemplateError) reply = { id: job.id, error: message, kind: 'render', budgetBound: error.budgetBound };
    else reply = { id: job.id, error: message, kind: 'internal' };
  }
  parentPort!.postMessage(reply);
});
