/**
 * Node's template thread: a worker_threads Worker that renders chat templates
 * (template-thread-worker.ts), started by the first rendering that needs it. One job at a
 * time, in order; a job whose request goes away, or that passes its deadline, stops the
 * thread (a rendering cannot be interrupted otherwise) and the next job gets a fresh one.
 * An idle thread does not keep the process alive.
 */
import { SerialWorker, startModuleWorker } from '../threads/serial-worker.js';
import { ChatTemplateError } from './chat-template.js';
import { TemplateSyntaxError, type TemplateThread } from './template-thread.js';
import type { TemplateThreadMessage, TemplateThreadReply } from './template-thread-worker.js';

export function createNodeTemplateThread(): TemplateThread {
  const thread = new SerialWorker<TemplateThreadReply>(() => startModuleWorker(import.meta.url, 'template-thread-worker'), 'the template thread');
  let nextId = 1;
  let closed = false;

  return {
    render(job, { timeoutMs, signal }) {
      if (closed) return Promise.reject(new Error('the template thread was closed'));
      const id = nextId++;
      return thread.run({
        id,
        send: (worker) => worker.postMessage({ id, ...job } satisfies TemplateThreadMessage),
        signal,
        timeout: {
          ms: timeoutMs,
          error: () => new ChatTemplateError(`The chat template was stopped: its rendering took more than ${timeoutMs} ms (maxChatTemplateMs).`, 'time'),
        },
        settle: (reply) => {
          if ('text' in reply) return reply.text;
          if (reply.kind === 'syntax') throw new TemplateSyntaxError(reply.error);
          if (reply.kind === 'render') throw new ChatTemplateError(reply.error, reply.budgetBound);
          throw new Error(`rendering the chat template failed on the template thread: ${reply.error}`);
        },
        crashed: (error) => new Error(`the template thread failed: ${error.message}`),
      }) as Promise<string>;
    },
    close() {
      closed = true;
      return thread.close(() => new Error('the template thread was closed'));
    },
  };
}
