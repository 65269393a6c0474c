/**
 * Node's template threads: a small pool of worker_threads Workers that render chat templates
 * (template-thread-worker.ts), each started by the first rendering that needs it. Jobs wait
 * in a bounded queue, taken from clients in turn; a job's deadline (maxChatTemplateMs) counts
 * from when it was queued; a job whose request goes away, or that passes its deadline, stops
 * its thread (a rendering cannot be interrupted otherwise), which starts afresh with its next
 * job (threads/worker-pool.ts). An idle thread does not keep the process alive.
 */
import { WorkerPool, startModuleWorker, type PoolLimits } from '../threads/worker-pool.js';
import { ChatTemplateError } from './chat-template.js';
import { TemplateSyntaxError, type TemplateThread } from './template-thread.js';
import type { TemplateThreadMessage, TemplateThreadReply } from './template-thread-worker.js';

export function createNodeTemplateThread(limits: Partial<PoolLimits> = {}): TemplateThread {
  const thread = new WorkerPool<TemplateThreadReply>(() => startModuleWorker(import.meta.url, 'template-thread-worker'), 'the template thread', limits);
  let nextId = 1;
  let closed = false;

  return {
    render(job, { timeoutMs, signal, client }) {
      if (closed) return Promise.reject(new Error('the template thread was closed'));
      const id = nextId++;
      return thread.run({
        id,
        client,
        send: (worker) => worker.postMessage({ id, ...job } satisfies TemplateThreadMessage),
        signal,
        timeout: {
          ms: timeoutMs,
          error: () => new ChatTemplateError(`The chat template was stopped: its rendering took more than ${timeoutMs} ms (maxChatTemplateMs), counting the time it waited for a template thread.`, 'time'),
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
    close(reason = () => new Error('the template thread was closed')) {
      closed = true;
      return thread.close(reason);
    },
  };
}
