import { it, vi } from 'vitest';
import { writeFileSync } from 'node:fs';
import { ChatTemplate } from '/work/wt/templates/src/tokenizer/chat-template.js';
import { loadCorpus, renderPair, sameOutcome, templateSource } from '/work/wt/templates/test/tokenizer/chat-template-corpus.js';
it('measures', () => {
  const corpus = loadCorpus();
  vi.useFakeTimers({ toFake: ['Date'] });
  vi.setSystemTime(new Date(corpus.now));
  let same = 0, total = 0; const diffs: string[] = []; const perTemplate: Record<string, number> = {};
  for (const [name, ref] of Object.entries(corpus.templates)) {
    let template: ChatTemplate | null = null; let parseError = '';
    try { template = new ChatTemplate(templateSource(name), corpus.bosToken, corpus.eosToken); } catch (e) { parseError = (e as Error).message; }
    if (template && template.contentFormat !== ref.contentFormat) diffs.push(`${name} FORMAT ours=${template.contentFormat} ref=${ref.contentFormat}`);
    for (const conv of corpus.conversations) {
      total++;
      const reference = ref.outcomes[conv.name];
      const ours = template ? renderPair(template, conv) : { error: 'PARSE ' + parseError };
      if (sameOutcome(ours, reference)) same++;
      else { perTemplate[name] = (perTemplate[name] ?? 0) + 1; diffs.push(`${name} :: ${conv.name}\n  ours=${JSON.stringify(ours).slice(0, 600)}\n  ref =${JSON.stringify(reference).slice(0, 600)}`); }
    }
  }
  vi.useRealTimers();
  writeFileSync('/tmp/corpus-diffs.txt', `${same}/${total} = ${(100 * same / total).toFixed(1)}%\n` + Object.entries(perTemplate).map(([k, v]) => `${v} ${k}`).join('\n') + '\n\n' + diffs.join('\n'));
  console.log(`${same}/${total}`);
});
