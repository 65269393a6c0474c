/**
 * docs/api.md documents every request parameter the schemas of src/protocol accept: each
 * field of an endpoint's schema has a row in that endpoint's parameter table (for the OpenAI
 * endpoints, or in the table of parameters both share), and no row names a field the schemas
 * do not have.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { MindieGenerateRequestSchema } from '../../src/protocol/mindie.js';
import { openAISamplingShape } from '../../src/protocol/openai-common.js';
import { ChatCompletionRequestSchema } from '../../src/protocol/openai-chat.js';
import { CompletionRequestSchema } from '../../src/protocol/openai-completions.js';
import { REPO_ROOT } from './doc-blocks.js';

const page = readFileSync(join(REPO_ROOT, 'docs/api.md'), 'utf8');

/** The parameter names (first column, code spans) of the table under `### <heading>`. */
function parameterTable(heading: string): string[] {
  const start = page.indexOf(`### ${heading}\n`);
  expect(start, `docs/api.md has "### ${heading}"`).toBeGreaterThanOrEqual(0);
  const section = page.slice(start + heading.length + 5).split(/\n#{2,3} /)[0]!;
  return section
    .split('\n')
    .filter((line) => line.startsWith('| `'))
    .flatMap((line) => [...line.split('|')[1]!.matchAll(/`([a-z_]+)`/g)].map((m) => m[1]!));
}

/** /generate reads these structured-output fields from the body itself (src/http/routes/generate.ts). */
const GENERATE_GUIDED_FIELDS = ['guided_json', 'guided_regex', 'guided_choice', 'response_format'];

describe('docs/api.md parameter tables', () => {
  const common = parameterTable('Parameters of both OpenAI endpoints');

  it('/generate: every field of the MindIE schema, and only those', () => {
    const documented = parameterTable('Parameters of `/generate`');
    expect([...documented].sort()).toEqual([...Object.keys(MindieGenerateRequestSchema.shape), ...GENERATE_GUIDED_FIELDS].sort());
  });

  it('both OpenAI endpoints: every shared field, and only those', () => {
    expect([...common].sort()).toEqual(Object.keys(openAISamplingShape).sort());
  });

  it('/v1/completions: every field of its own', () => {
    const own = Object.keys(CompletionRequestSchema.shape).filter((key) => !(key in openAISamplingShape));
    expect([...parameterTable('Parameters of `/v1/completions`')].sort()).toEqual(own.sort());
  });

  it('/v1/chat/completions: every field of its own', () => {
    const own = Object.keys(ChatCompletionRequestSchema.shape).filter((key) => !(key in openAISamplingShape));
    expect([...parameterTable('Parameters of `/v1/chat/completions`')].sort()).toEqual(own.sort());
  });
});
