import { describe, expect, it } from 'vitest';
import { forwardingGuideCompiler } from '../../src/engine/remote/guides.js';
import { completionRequestBody } from '../../src/engine/remote/request.js';
import { defaultSamplingParams } from '../../src/sampling/params.js';

describe("RemoteEngine's structured output", () => {
  const body = async (request: Parameters<typeof forwardingGuideCompiler>[0]) =>
    JSON.parse(
      completionRequestBody({ model: 'm', promptTokenIds: [1, 2], params: defaultSamplingParams({ guide: await forwardingGuideCompiler(request) }), tokenIds: 'usage' }),
    ) as Record<string, unknown>;

  it('sends each kind of constraint upstream under vLLM names', async () => {
    const schema = { type: 'object', properties: { a: { type: 'integer' } } };
    expect((await body({ kind: 'json', schema })).guided_json).toEqual(schema);
    expect((await body({ kind: 'json_object' })).response_format).toEqual({ type: 'json_object' });
    expect((await body({ kind: 'regex', pattern: '[a-z]+' })).guided_regex).toBe('[a-z]+');
    expect((await body({ kind: 'choice', choices: ['yes', 'no'] })).guided_choice).toEqual(['yes', 'no']);
  });

  it('never compiles the constraint locally', async () => {
    const factory = await forwardingGuideCompiler({ kind: 'regex', pattern: 'a' });
    expect(() => factory.createGuide()).toThrow(/enforced by the upstream/);
    const plain = JSON.parse(completionRequestBody({ model: 'm', promptTokenIds: [1], params: defaultSamplingParams(), tokenIds: 'usage' }));
    expect(plain).not.toHaveProperty('guided_json');
  });
});
