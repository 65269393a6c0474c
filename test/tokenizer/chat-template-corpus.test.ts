import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { ChatTemplate } from '../../src/tokenizer/chat-template.js';
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
