import { describe, expect, it, vi } from 'vitest';
import { ChatTemplate, ChatTemplateError } from '../../src/tokenizer/chat-template.js';
import { TEMPLATE_VALUE_ITEMS } from '../../src/tokenizer/template-budget.js';

/**
 * Each case: a one-line template and what Jinja2 3.1 renders for it under transformers'
 * environment (checked with jinja2 3.1.6: the strings below are its output).
 */
const render = (source: string, variables: Record<string, unknown> = {}) =>
  new ChatTemplate(source, '', '').render([{ role: 'user', content: 'x' }], { addGenerationPrompt: false, continueFinalMessage: false, kwargs: variables });

describe('our jinja copy renders as Jinja2', () => {
  it.each([
    ['continue keeps what the iteration wrote', '{% for x in [1,2,3] %}a{{x}}{% if x == 2 %}{% continue %}{% endif %}b{% endfor %}', 'a1ba2a3b'],
    ['break keeps what the iteration wrote', '{% for x in [1,2,3] %}a{{x}}{% if x == 2 %}{% break %}{% endif %}b{% endfor %}', 'a1ba2'],
    ['filters on undefined', '{{ nothing|length }}|{{ nothing|default("d") }}|{{ nothing|trim }}|{{ nothing|list }}', '0|d||[]'],
    ['a loop over undefined', '{% for x in nothing %}x{% endfor %}ok', 'ok'],
    ['none|selectattr is empty', "{{ tools|selectattr('type','equalto','x')|list }}", '[]'],
    ["'' == false is false", "{{ '' == false }}|{{ 0 == false }}|{{ 1 == true }}|{{ [1] == [1] }}|{{ none == nothing }}", 'False|True|True|True|False'],
    ['CRLF reads as \\n', 'a\r\n{% if true %}\r\nb\r\n{% endif %}\r\nc', 'a\nb\nc'],
    ['Python str() of values', "{{ none }}|{{ true }}|{{ [1, 'a', none, true] }}|{{ {'a': 1, 'b': [false]} }}|{{ {'k': 'v'}|string }}", "None|True|[1, 'a', None, True]|{'a': 1, 'b': [False]}|{'k': 'v'}"],
    ['repr quotes', `{{ ["it's", 'q"'] }}`, `["it's", 'q"']`],
    ['~ with none', "{{ 'a' ~ 1 ~ none }}", 'a1None'],
    ['iterating a string', '{% for c in "abc" %}{{c}}.{% endfor %}', 'a.b.c.'],
    ['|min and |max', '{{ [3,1,2]|min }}{{ [3,1,2]|max }}', '13'],
    ['string filters take str() first', '{{ [1, 2]|trim }}|{{ none|upper }}', '[1, 2]|NONE'],
  ])('%s', (_name, source, expected) => {
    expect(render(source, { tools: null })).toBe(expected);
  });

  it('strftime_now in the C locale, every format the corpus uses', () => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date(2025, 2, 7, 9, 5, 2));
    try {
      expect(render("{{ strftime_now('%A %a %d %e %B %b %Y %y %m %H %I %p %M %S %j %%') }}")).toBe('Friday Fri 07  7 March Mar 2025 25 03 09 09 AM 05 02 066 %');
    } finally {
      vi.useRealTimers();
    }
  });
});

describe('every value the engine builds is bounded (issue 41: a request template doubling a list)', () => {
  it('refuses ns.a = ns.a + ns.a doubling before it takes the heap', () => {
    const doubling = '{% set ns = namespace(a=[1]) %}{% for i in range(64) %}{% set ns.a = ns.a + ns.a %}{% endfor %}{{ ns.a|length }}';
    const template = new ChatTemplate(doubling, '', '');
    const options = { addGenerationPrompt: false, continueFinalMessage: false };
    // Within a model template's whole budget the list bound stops it...
    expect(() => template.render([], { ...options, budget: { maxSteps: 10_000_000, maxOutputChars: 4 << 20 } })).toThrow(
      new RegExp(`built a list or dict of more than ${TEMPLATE_VALUE_ITEMS} items`),
    );
    // ...and with a request template's few thousand steps, the steps its items cost stop it first.
    expect(() => template.render([], { ...options, budget: { maxSteps: 2200, maxOutputChars: 4 << 20 } })).toThrow(ChatTemplateError);
    expect(() => template.render([], { ...options, budget: { maxSteps: 2200, maxOutputChars: 4 << 20 } })).toThrow(/more than 2200 evaluation steps/);
  });

  it('looking up a long list costs nothing extra: a 1000-message conversation stays within the steps it took before', () => {
    const messages = Array.from({ length: 1000 }, (_, i) => ({ role: i % 2 ? 'assistant' : 'user', content: 'hi' }));
    const loop = "{% for m in messages %}{{ messages[loop.index0].role }}{{ messages|length }}{% endfor %}";
    expect(new ChatTemplate(loop, '', '').render(messages, { addGenerationPrompt: false, continueFinalMessage: false, budget: { maxSteps: 40_000, maxOutputChars: 1 << 20 } })).toHaveLength(500 * ("user".length + 4) + 500 * ("assistant".length + 4));
  });
});
