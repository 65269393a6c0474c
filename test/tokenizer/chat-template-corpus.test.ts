import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { Engine } from '../../src/engine/types.js';
import { ChatTemplate } from '../../src/tokenizer/chat-template.js';
import { MODEL, loadEngine, postJson, testApp } from '../http/helpers.js';
import { loadCorpus, renderPair, sameOutcome, templateSource } from './chat-template-corpus.js';

const corpus = loadCorpus();

/** The differences docs/chat-templates.md lists, read from its table ("template | conversation | why"). */
function documentedDifferences(): string[] {
  const doc = readFileSync(join(import.meta.dirname, '../../docs/chat-templates.md'), 'utf8');
  const section = doc.slice(doc.indexOf('## The differences that remain'));
  return section
    .split('\n')
    .filter((line) => line.startsWith('| ') && !line.startsWith('| template') && !line.startsWith('| ---'))
    .map((line) => line.split(' | ').slice(0, 2).map((cell) => cell.replace(/^\| /, '').trim()).join(' :: '));
}

describe('the chat-template corpus renders as transformers 5 with vLLM\'s preparation', () => {
  // strftime_now reads the clock the references were rendered at (local time, as Python's datetime.now()).
  beforeAll(() => {
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date(corpus.now));
  });
  afterAll(() => vi.useRealTimers());

  it('has at least 150 templates and 1200 pairs', () => {
    expect(Object.keys(corpus.templates).length).toBeGreaterThanOrEqual(150);
    expect(Object.keys(corpus.templates).length * corpus.conversations.length).toBeGreaterThanOrEqual(1200);
  });

  it('detects each template\'s content format as vLLM does', () => {
    const formats = Object.entries(corpus.templates).map(([name, ref]) => [name, new ChatTemplate(templateSource(name), '', '').contentFormat, ref.contentFormat]);
    expect(formats.filter(([, ours, theirs]) => ours !== theirs)).toEqual([]);
    expect(formats.filter(([, , theirs]) => theirs === 'openai').length).toBeGreaterThan(20);
  });

  it('matches on at least 99% of pairs; the pairs that differ are exactly the documented ones', () => {
    const differing: string[] = [];
    let pairs = 0;
    for (const [name, ref] of Object.entries(corpus.templates)) {
      const template = new ChatTemplate(templateSource(name), corpus.bosToken, corpus.eosToken);
      for (const conversation of corpus.conversations) {
        pairs++;
        if (!sameOutcome(renderPair(template, conversation), ref.outcomes[conversation.name])) differing.push(`${name} :: ${conversation.name}`);
      }
    }
    expect(differing).toEqual(documentedDifferences());
    expect((pairs - differing.length) / pairs).toBeGreaterThanOrEqual(0.99);
  });
});

describe('the same renderings through the HTTP routes (a sample: every 10th template, two conversations)', () => {
  let engine: Engine;
  beforeAll(async () => {
    engine = await loadEngine();
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(new Date(corpus.now));
  });
  afterAll(() => vi.useRealTimers());

  it('/tokenize with the template as the request\'s own gives the tokens of the reference text; a refused conversation is a 400', async () => {
    // Long tool prompts pass the embedded model's 512-token context: /tokenize counts up to a wider one here.
    const wide = Object.create(engine, { info: { value: { ...engine.info, maxModelLen: 1 << 16 } } }) as Engine;
    const app = testApp(wide, { trustRequestChatTemplate: true, maxPromptChars: 1 << 20 });
    const names = Object.keys(corpus.templates).filter((_, i) => i % 10 === 0);
    // Conversations without tools: a request's own template gets 2000 + 200 steps a message, which
    // Gemma 4's tool-schema macros pass with tools (the model's own template has the whole budget).
    const conversations = corpus.conversations.filter((c) => ['system-multiturn', 'kwargs-no-generation-prompt'].includes(c.name));
    let checked = 0;
    for (const name of names) {
      for (const conversation of conversations) {
        const reference = corpus.templates[name].outcomes[conversation.name];
        const response = await postJson(app, '/tokenize', {
          model: MODEL,
          messages: conversation.messages,
          tools: conversation.tools,
          chat_template: templateSource(name),
          chat_template_kwargs: { ...conversation.chat_template_kwargs, bos_token: corpus.bosToken, eos_token: corpus.eosToken },
          add_generation_prompt: conversation.add_generation_prompt ?? true,
        });
        if ('error' in reference) {
          expect(response.status, `${name} :: ${conversation.name}`).toBe(400);
          continue;
        }
        expect(response.status, `${name} :: ${conversation.name}: ${await response.clone().text()}`).toBe(200);
        const { tokens } = (await response.json()) as { tokens: number[] };
        expect(tokens, `${name} :: ${conversation.name}`).toEqual(engine.tokenizer.encode(reference.text, { addSpecialTokens: false }));
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(15);
  });
});
