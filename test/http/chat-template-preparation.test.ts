import { describe, expect, it } from 'vitest';
import { chatTemplateVariables, templateTools, toTemplateMessages } from '../../src/http/chat-prompt.js';
import { ChatMessageSchema, ToolSchema } from '../../src/protocol/openai-chat.js';
import { ChatTemplate } from '../../src/tokenizer/chat-template.js';
import { HttpError } from '../../src/http/errors.js';

const render = (source: string, messages: unknown[], variables: Record<string, unknown> = {}) =>
  new ChatTemplate(source, '<s>', '</s>').render(toTemplateMessages(messages.map((m) => ChatMessageSchema.parse(m))), {
    addGenerationPrompt: false,
    continueFinalMessage: false,
    kwargs: variables,
  });

describe('messages prepared as vLLM prepares them (chat_utils.parse_chat_messages)', () => {
  const toolTurn = [
    { role: 'user', content: 'Weather?' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get', arguments: '{"city": "Paris", "days": 2}' } }] },
    { role: 'tool', tool_call_id: 'c1', content: [{ type: 'text', text: 'sunny' }, { type: 'text', text: 'warm' }] },
  ];

  it('hands tool-call arguments to the template as the object their JSON encodes ({} when not JSON)', () => {
    const source = "{% for m in messages %}{% for c in m.tool_calls or [] %}{{ c.function.arguments|tojson }}|{{ c.function.arguments.city }}{% endfor %}{% endfor %}";
    expect(render(source, toolTurn)).toBe('{"city": "Paris", "days": 2}|Paris');
    const broken = [{ role: 'assistant', content: 'x', tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: 'not json' } }] }];
    expect(render(source, broken)).toBe('{}|');
  });

  it('drops an empty tool_calls list, keeps tool_call_id and joins a tool result made of text parts', () => {
    const source = "{% for m in messages %}{{ m.role }}:{{ 'calls' if m.tool_calls is defined }}:{{ m.tool_call_id }}:{{ m.content }};{% endfor %}";
    const messages = [{ role: 'assistant', content: 'a', tool_calls: [] }, toolTurn[2]];
    expect(render(source, messages)).toBe('assistant:::a;tool::c1:sunny\nwarm;');
  });

  it('content: a string for a template that prints it, a list of text parts for one that loops over it', () => {
    const printing = "{% for m in messages %}[{{ m.content }}]{% endfor %}";
    const looping = "{% for m in messages %}{% for part in m['content'] %}<{{ part.type }}:{{ part.text }}>{% endfor %}{% endfor %}";
    const viaSlice = "{% set loop_messages = messages[1:] %}{% for m in loop_messages %}{% for part in m.content|list %}<{{ part.text }}>{% endfor %}{% endfor %}";
    const messages = [{ role: 'system', content: 'S' }, { role: 'user', content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b' }] }, { role: 'assistant', content: null }];
    expect(new ChatTemplate(printing, '', '').contentFormat).toBe('string');
    expect(render(printing, messages)).toBe('[S][a\nb][]');
    expect(new ChatTemplate(looping, '', '').contentFormat).toBe('openai');
    expect(render(looping, messages)).toBe('<text:S><text:a><text:b>');
    expect(new ChatTemplate(viaSlice, '', '').contentFormat).toBe('openai');
    expect(render(viaSlice, messages)).toBe('<a><b>');
  });

  it('keeps name, reasoning (under both names) and a developer message\'s tools', () => {
    const source = "{% for m in messages %}{{ m|tojson }};{% endfor %}";
    const messages = [
      { role: 'developer', content: 'd' },
      { role: 'assistant', content: 'x', name: 'bot', reasoning: 'because', extra: 'dropped' },
    ];
    expect(render(source, messages)).toBe(
      '{"role": "developer", "content": "d", "tools": null};{"role": "assistant", "content": "x", "reasoning": "because", "reasoning_content": "because", "name": "bot"};',
    );
  });
});

describe('template variables as vLLM passes them', () => {
  it('tools and documents are none when absent (templates test `tools is not none`)', () => {
    const source = "{{ 'y' if tools is none }}/{{ 'y' if documents is none }}/{{ 'y' if tools is defined }}";
    expect(render(source, [{ role: 'user', content: 'x' }], chatTemplateVariables({}))).toBe('y/y/y');
  });

  it('tool definitions as given: an omitted description is null, unknown keys such as strict are kept', () => {
    const tools = [ToolSchema.parse({ type: 'function', function: { name: 'f', parameters: { type: 'object' }, strict: true }, cache: 'x' })];
    expect(templateTools(tools)).toEqual([{ type: 'function', function: { name: 'f', description: null, parameters: { type: 'object' }, strict: true }, cache: 'x' }]);
    const source = '{{ tools|tojson }}';
    expect(render(source, [{ role: 'user', content: 'x' }], chatTemplateVariables({ tools }))).toBe(
      '[{"type": "function", "function": {"name": "f", "description": null, "parameters": {"type": "object"}, "strict": true}, "cache": "x"}]',
    );
  });

  it('passes chat_template_kwargs through, and refuses the keys vLLM refuses', () => {
    expect(render("{{ 'off' if enable_thinking == false }}", [{ role: 'user', content: 'x' }], chatTemplateVariables({ chat_template_kwargs: { enable_thinking: false } }))).toBe('off');
    expect(() => chatTemplateVariables({ chat_template_kwargs: { tokenize: true } })).toThrow(HttpError);
    expect(() => chatTemplateVariables({ chat_template_kwargs: { tokenize: true } })).toThrow("Found unexpected chat template kwargs from request: {'tokenize'}");
  });
});
