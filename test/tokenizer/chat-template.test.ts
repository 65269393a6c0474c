import { describe, expect, it } from 'vitest';
import { ChatTemplate, ChatTemplateError, chatTemplateFromTokenizerConfig } from '../../src/tokenizer/chat-template.js';

// Llama 2's chat template, as published in meta-llama/Llama-2-7b-chat-hf's tokenizer_config.json.
const LLAMA2_TEMPLATE =
  "{% if messages[0]['role'] == 'system' %}{% set loop_messages = messages[1:] %}{% set system_message = messages[0]['content'] %}{% else %}{% set loop_messages = messages %}{% set system_message = false %}{% endif %}{% for message in loop_messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{% if loop.index0 == 0 and system_message != false %}{% set content = '<<SYS>>\\n' + system_message + '\\n<</SYS>>\\n\\n' + message['content'] %}{% else %}{% set content = message['content'] %}{% endif %}{% if message['role'] == 'user' %}{{ bos_token + '[INST] ' + content.strip() + ' [/INST]' }}{% elif message['role'] == 'assistant' %}{{ ' '  + content.strip() + ' ' + eos_token }}{% endif %}{% endfor %}";

// ChatML (Qwen / many fine-tunes): uses add_generation_prompt.
const CHATML_TEMPLATE =
  "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

const llama2 = new ChatTemplate(LLAMA2_TEMPLATE, '<s>', '</s>');
const chatml = new ChatTemplate(CHATML_TEMPLATE, '', '<|im_end|>');

describe('ChatTemplate.render', () => {
  it('renders a Llama 2 conversation with bos_token/eos_token and the system prompt folded in', () => {
    const text = llama2.render(
      [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Hello!' },
        { role: 'user', content: 'Tell a story' },
      ],
      { addGenerationPrompt: true, continueFinalMessage: false },
    );
    expect(text).toBe('<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello! </s><s>[INST] Tell a story [/INST]');
  });

  it('appends the assistant header only with add_generation_prompt', () => {
    const messages = [{ role: 'user', content: 'Hi' }];
    expect(chatml.render(messages, { addGenerationPrompt: true, continueFinalMessage: false })).toBe(
      '<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n',
    );
    expect(chatml.render(messages, { addGenerationPrompt: false, continueFinalMessage: false })).toBe(
      '<|im_start|>user\nHi<|im_end|>\n',
    );
  });

  it('continue_final_message leaves the last assistant message open (no EOS / turn end)', () => {
    const messages = [
      { role: 'user', content: 'Tell a story' },
      { role: 'assistant', content: 'Once upon a time' },
    ];
    expect(llama2.render(messages, { addGenerationPrompt: false, continueFinalMessage: true })).toBe(
      '<s>[INST] Tell a story [/INST] Once upon a time',
    );
    expect(chatml.render(messages, { addGenerationPrompt: false, continueFinalMessage: true })).toBe(
      '<|im_start|>user\nTell a story<|im_end|>\n<|im_start|>assistant\nOnce upon a time',
    );
  });

  it('continue_final_message finds content the template stripped', () => {
    const text = llama2.render(
      [
        { role: 'user', content: 'Go' },
        { role: 'assistant', content: '  Once upon a time  ' },
      ],
      { addGenerationPrompt: false, continueFinalMessage: true },
    );
    expect(text).toBe('<s>[INST] Go [/INST] Once upon a time');
  });

  it('refuses add_generation_prompt together with continue_final_message', () => {
    expect(() =>
      chatml.render([{ role: 'assistant', content: 'x' }], { addGenerationPrompt: true, continueFinalMessage: true }),
    ).toThrow(ChatTemplateError);
  });

  it("turns the template's raise_exception into a ChatTemplateError with its message", () => {
    const render = () =>
      llama2.render(
        [
          { role: 'user', content: 'a' },
          { role: 'user', content: 'b' },
        ],
        { addGenerationPrompt: true, continueFinalMessage: false },
      );
    expect(render).toThrow(ChatTemplateError);
    expect(render).toThrow(/Conversation roles must alternate/);
  });

  it('passes chat_template_kwargs as template variables', () => {
    const template = new ChatTemplate(
      "{% if enable_thinking %}<think>{% endif %}{{ messages[0]['content'] }}",
      '',
      '',
    );
    const options = { addGenerationPrompt: false, continueFinalMessage: false };
    expect(template.render([{ role: 'user', content: 'q' }], { ...options, kwargs: { enable_thinking: true } })).toBe('<think>q');
    expect(template.render([{ role: 'user', content: 'q' }], options)).toBe('q');
  });

  it('does not let chat_template_kwargs replace the messages', () => {
    const template = new ChatTemplate("{{ messages[0]['content'] }}", '', '');
    const text = template.render([{ role: 'user', content: 'real' }], {
      addGenerationPrompt: false,
      continueFinalMessage: false,
      kwargs: { messages: [{ role: 'user', content: 'injected' }] },
    });
    expect(text).toBe('real');
  });
});

describe('chatTemplateFromTokenizerConfig', () => {
  it('reads the template and AddedToken-style bos/eos strings', () => {
    const template = chatTemplateFromTokenizerConfig({
      chat_template: '{{ bos_token }}{{ messages[0].content }}{{ eos_token }}',
      bos_token: { content: '<s>', lstrip: false },
      eos_token: '</s>',
    });
    expect(template?.render([{ role: 'user', content: 'x' }], { addGenerationPrompt: false, continueFinalMessage: false })).toBe(
      '<s>x</s>',
    );
  });

  it('picks the "default" entry of a multi-template list', () => {
    const template = chatTemplateFromTokenizerConfig({
      chat_template: [
        { name: 'tool_use', template: 'TOOLS' },
        { name: 'default', template: 'DEFAULT' },
      ],
    });
    expect(template?.source).toBe('DEFAULT');
  });

  it('returns null when the model has no template, and uses fallback token strings', () => {
    expect(chatTemplateFromTokenizerConfig({ bos_token: '<s>' })).toBeNull();
    const template = chatTemplateFromTokenizerConfig({ chat_template: '{{ bos_token }}|{{ eos_token }}' }, { bosToken: 'B', eosToken: 'E' });
    expect(template?.render([], { addGenerationPrompt: false, continueFinalMessage: false })).toBe('B|E');
  });

  it('fails at construction on a template that does not parse', () => {
    expect(() => chatTemplateFromTokenizerConfig({ chat_template: '{% for x in %}' })).toThrow();
  });
});
