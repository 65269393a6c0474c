import { readFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { ChatTemplate, ChatTemplateError, chatTemplateFromTokenizerConfig, type ChatTemplateMessage, type ChatTemplateOptions } from '../../src/tokenizer/chat-template.js';
import { createNodeTemplateThread } from '../../src/tokenizer/node-template-thread.js';
import { INLINE_TEMPLATE_MESSAGES, INLINE_TEMPLATE_STEPS, renderChatTemplate, TemplateSyntaxError, type TemplateThread } from '../../src/tokenizer/template-thread.js';

const fixture = (path: string) => new URL(`../fixtures/${path}`, import.meta.url);
const configTemplate = (path: string) => chatTemplateFromTokenizerConfig(JSON.parse(readFileSync(fixture(path), 'utf8')), { bosToken: '<s>', eosToken: '</s>' })!;
const jinja = (path: string) => new ChatTemplate(readFileSync(fixture(path), 'utf8'), '<s>', '</s>');

// The templates of the models the project serves in its tests (transformers' apply_chat_template gives their texts there).
const TEMPLATES: Array<[string, ChatTemplate, 'text' | 'parts']> = [
  ['stories260K (embedded)', chatTemplateFromTokenizerConfig(JSON.parse(readFileSync(new URL('../../models/stories260k/tokenizer_config.json', import.meta.url), 'utf8')))!, 'text'],
  ['transformers 5 text', jinja('transformers5/text/chat_template.jinja'), 'text'],
  ['transformers 5 tool_use', jinja('transformers5/text/additional_chat_templates/tool_use.jinja'), 'text'],
  ['Qwen2-Audio', configTemplate('multimodal/qwen2-audio/tokenizer_config.json'), 'text'],
  ['Ultravox (Llama 3)', configTemplate('multimodal/ultravox/tokenizer_config.json'), 'text'],
  ['LLaVA', configTemplate('multimodal/llava/tokenizer_config.json'), 'parts'],
  ['SmolVLM', configTemplate('multimodal/smolvlm/tokenizer_config.json'), 'parts'],
];

/** A conversation of `count` messages, system first, user and assistant alternating, ending with the user. */
function conversation(count: number, form: 'text' | 'parts'): ChatTemplateMessage[] {
  return Array.from({ length: count }, (_, i) => {
    const role = i === 0 ? 'system' : i % 2 === 1 || i === count - 1 ? 'user' : 'assistant';
    const text = `Message ${i}: once upon a time, ${'a story '.repeat(i % 7)}with ünïcödé and "quotes"\n`;
    return { role, content: form === 'text' ? text : [{ type: 'text', text }, ...(i % 5 === 1 ? [{ type: 'image' }] : [])] };
  });
}

const TOOLS = [{ type: 'function', function: { name: 'get_weather', description: 'The weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];

const threads: TemplateThread[] = [];
afterAll(async () => {
  await Promise.all(threads.map((thread) => thread.close()));
});

function newThread(): TemplateThread {
  const thread = createNodeTemplateThread();
  threads.push(thread);
  return thread;
}

/** The thread, counting the jobs it is sent. */
function counting(thread: TemplateThread): TemplateThread & { jobs: number } {
  const counted = { jobs: 0, render: (...args: Parameters<TemplateThread['render']>) => ((counted.jobs += 1), thread.render(...args)), close: () => thread.close() };
  return counted;
}

const budget = { maxSteps: 500_000, maxOutputChars: 4 * 1024 * 1024 };

describe('rendering on the template thread', () => {
  const thread = newThread();

  it("gives ChatTemplate.render's text byte for byte: every served model's template, short and long conversations, tools, continue_final_message", async () => {
    let compared = 0;
    for (const [name, template, form] of TEMPLATES) {
      for (const count of [1, 3, 40, 1000]) {
        const messages = conversation(count, form);
        for (const options of [
          { addGenerationPrompt: true, continueFinalMessage: false, kwargs: { tools: TOOLS }, budget },
          { addGenerationPrompt: false, continueFinalMessage: true, budget },
        ] satisfies ChatTemplateOptions[]) {
          let expected: string;
          try {
            expected = template.render(messages, options);
          } catch (error) {
            // The same refusal there (a template that wants alternating roles, content it cannot find).
            await expect(thread.render({ source: template.source, bosToken: template.bosToken, eosToken: template.eosToken, messages, options }, { timeoutMs: 20_000 })).rejects.toThrow((error as Error).message);
            continue;
          }
          const text = await thread.render({ source: template.source, bosToken: template.bosToken, eosToken: template.eosToken, messages, options }, { timeoutMs: 20_000 });
          expect(text, `${name}, ${count} messages`).toBe(expected);
          compared += 1;
        }
      }
    }
    // Most of them render (some templates refuse a conversation ending on the user with continue_final_message).
    expect(compared).toBeGreaterThanOrEqual(TEMPLATES.length * 4);
  });

  it('stops at the same steps and output bounds, with the same ChatTemplateError', async () => {
    const [, template] = TEMPLATES[0];
    const messages = conversation(300, 'text');
    for (const limits of [{ maxSteps: 5000, maxOutputChars: 1 << 20, stepsBound: 'a bound named here' }, { maxSteps: 500_000, maxOutputChars: 1000 }]) {
      const options = { addGenerationPrompt: true, continueFinalMessage: false, budget: limits };
      const here = (() => {
        try {
          template.render(messages, options);
        } catch (error) {
          return error as ChatTemplateError;
        }
        throw new Error('expected a refusal');
      })();
      const there = await thread
        .render({ source: template.source, bosToken: template.bosToken, eosToken: template.eosToken, messages, options }, { timeoutMs: 20_000 })
        .then(() => null, (error: unknown) => error as ChatTemplateError);
      expect(there).toBeInstanceOf(ChatTemplateError);
      expect(there!.message).toBe(here.message);
      expect(there!.budgetBound).toBe(here.budgetBound);
    }
  });

  it('stops a rendering past its deadline (a ChatTemplateError naming maxChatTemplateMs), and the next job gets a fresh thread', async () => {
    const slow = new ChatTemplate('{% for i in range(400000) %}{{ i }}{% endfor %}', '', '');
    const started = performance.now();
    const failure = await thread
      .render({ source: slow.source, bosToken: '', eosToken: '', messages: [], options: { addGenerationPrompt: false, continueFinalMessage: false, budget: { maxSteps: 10_000_000, maxOutputChars: 1 << 24 } } }, { timeoutMs: 50 })
      .then(() => null, (error: unknown) => error as ChatTemplateError);
    expect(failure).toBeInstanceOf(ChatTemplateError);
    expect(failure!.budgetBound).toBe('time');
    expect(failure!.message).toMatch(/took more than 50 ms \(maxChatTemplateMs\)/);
    expect(performance.now() - started).toBeLessThan(5000);
    const [, template] = TEMPLATES[0];
    const messages = conversation(3, 'text');
    const options = { addGenerationPrompt: true, continueFinalMessage: false };
    expect(await thread.render({ source: template.source, bosToken: template.bosToken, eosToken: template.eosToken, messages, options }, { timeoutMs: 20_000 })).toBe(template.render(messages, options));
  });

  it('stops a rendering whose request goes away', async () => {
    const slow = new ChatTemplate('{% for i in range(400000) %}{{ i }}{% endfor %}', '', '');
    const client = new AbortController();
    const pending = thread.render(
      { source: slow.source, bosToken: '', eosToken: '', messages: [], options: { addGenerationPrompt: false, continueFinalMessage: false, budget: { maxSteps: 10_000_000, maxOutputChars: 1 << 24 } } },
      { timeoutMs: 20_000, signal: client.signal },
    );
    setTimeout(() => client.abort(new Error('client gone')), 30);
    await expect(pending).rejects.toThrow('client gone');
  });
});

describe('renderChatTemplate: here when short, on the thread when it can be long', () => {
  const [, template] = TEMPLATES[0];
  const options = { addGenerationPrompt: true, continueFinalMessage: false, budget };

  it('renders a short conversation here (no thread round trip), a long one on the thread: the same text either way', async () => {
    const thread = counting(newThread());
    const short = conversation(5, 'text');
    expect(await renderChatTemplate(template, short, options, { thread, timeoutMs: 20_000 })).toBe(template.render(short, options));
    expect(thread.jobs).toBe(0);
    const long = conversation(INLINE_TEMPLATE_MESSAGES + 1, 'text');
    expect(await renderChatTemplate(template, long, options, { thread, timeoutMs: 20_000 })).toBe(template.render(long, options));
    expect(thread.jobs).toBe(1);
    // Long text goes there too, however few the messages.
    const wordy = [{ role: 'user', content: 'word '.repeat(20_000) }];
    expect(await renderChatTemplate(template, wordy, options, { thread, timeoutMs: 20_000 })).toBe(template.render(wordy, options));
    expect(thread.jobs).toBe(2);
  });

  it(`a short conversation whose rendering passes ${INLINE_TEMPLATE_STEPS} steps here moves to the thread, with the request's whole budget`, async () => {
    const thread = counting(newThread());
    const looping = new ChatTemplate(`{% for i in range(${INLINE_TEMPLATE_STEPS * 2}) %}.{% endfor %}{{ messages[0]['content'] }}`, '', '');
    const messages = [{ role: 'user', content: 'Hi' }];
    expect(await renderChatTemplate(looping, messages, options, { thread, timeoutMs: 20_000 })).toBe(`${'.'.repeat(INLINE_TEMPLATE_STEPS * 2)}Hi`);
    expect(thread.jobs).toBe(1);
    // Past the request's own budget it is refused as before, naming that bound.
    const small = { ...options, budget: { ...budget, maxSteps: INLINE_TEMPLATE_STEPS * 3 } };
    await expect(renderChatTemplate(looping, messages, small, { thread, timeoutMs: 20_000 })).rejects.toThrow(`more than ${INLINE_TEMPLATE_STEPS * 3} evaluation steps`);
    // A budget within the inline steps is judged here.
    const tiny = { ...options, budget: { ...budget, maxSteps: 100 } };
    await expect(renderChatTemplate(looping, messages, tiny, { thread, timeoutMs: 20_000 })).rejects.toThrow('more than 100 evaluation steps');
    expect(thread.jobs).toBe(2);
  });

  it('a template given as source (a long request template) is parsed on the thread; one that does not parse fails as parsing here would', async () => {
    const thread = counting(newThread());
    const unit = "{% for m in messages %}{% if m['role'] == 'user' %}{{ m['content'] | trim }}{% else %}{{ 'x' + m['content'] }}{% endif %}{% endfor %}";
    const source = unit.repeat(Math.ceil(16_384 / unit.length));
    const messages = conversation(3, 'text');
    const plain = { addGenerationPrompt: false, continueFinalMessage: false, budget };
    expect(await renderChatTemplate({ source, bosToken: '', eosToken: '' }, messages, plain, { thread, timeoutMs: 20_000 })).toBe(new ChatTemplate(source, '', '').render(messages, plain));
    expect(thread.jobs).toBe(1);
    const broken = `${source}{% for %}`;
    const here = (() => {
      try {
        new ChatTemplate(broken, '', '');
      } catch (error) {
        return (error as Error).message;
      }
      throw new Error('expected a syntax error');
    })();
    for (const offLoop of [{ thread, timeoutMs: 20_000 }, undefined]) {
      const failure = await renderChatTemplate({ source: broken, bosToken: '', eosToken: '' }, messages, plain, offLoop).then(() => null, (error: unknown) => error as Error);
      expect(failure).toBeInstanceOf(TemplateSyntaxError);
      expect(failure!.message).toBe(here);
    }
  });

  it('without a thread (workerd, the page) renders here within the budget, as before', async () => {
    const long = conversation(1000, 'text');
    expect(await renderChatTemplate(template, long, options)).toBe(template.render(long, options));
  });
});
