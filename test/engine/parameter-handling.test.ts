/**
 * The remote engine's parameter map (src/engine/remote/request.ts) is typed over every key of
 * SamplingParams; here each parameter it says it sends is checked to reach the upstream's body,
 * and each one it says is refused to be refused before a request is made.
 */
import { describe, expect, it } from 'vitest';
import { REMOTE_PARAMETER_HANDLING, completionRequestBody } from '../../src/engine/remote/request.js';
import { unsupportedByEngine } from '../../src/protocol/unsupported.js';
import { defaultSamplingParams, type SamplingParams } from '../../src/sampling/params.js';

/** A value for each key unlike its default, so that sending it shows. */
const CHANGED: { [K in keyof SamplingParams]-?: SamplingParams[K] } = {
  maxTokens: 7,
  minTokens: 3,
  temperature: 0.7,
  topK: 5,
  topP: 0.5,
  minP: 0.1,
  repetitionPenalty: 1.2,
  presencePenalty: 0.4,
  frequencyPenalty: 0.3,
  logitBias: new Map([[5, 2]]),
  seed: 42n,
  stop: ['END'],
  stopTokenIds: [9],
  includeStopStrInOutput: true,
  ignoreEos: true,
  skipSpecialTokens: false,
  guide: undefined as never,
  n: 2,
  bestOf: 3,
  useBeamSearch: true,
  lengthPenalty: 0.5,
  earlyStopping: true,
  logprobs: 2,
  promptLogprobs: 1,
};

describe('what the remote engine does with each sampling parameter', () => {
  const defaults = completionRequestBody({ model: 'm', promptTokenIds: [1], params: defaultSamplingParams(), tokenIds: 'usage' });

  for (const [key, handling] of Object.entries(REMOTE_PARAMETER_HANDLING) as [keyof SamplingParams, (typeof REMOTE_PARAMETER_HANDLING)[keyof SamplingParams]][]) {
    if (key === 'guide') continue; // a compiled Guide: test/engine/remote-engine tests send guided fields
    if ('sent' in handling) {
      it(`sends ${key} as ${handling.sent}`, () => {
        const body = completionRequestBody({ model: 'm', promptTokenIds: [1], params: defaultSamplingParams({ [key]: CHANGED[key] }), tokenIds: 'usage' });
        expect(body).not.toEqual(defaults);
        expect(body).toContain(`"${handling.sent}":`);
      });
    } else if ('refused' in handling) {
      it(`refuses ${key} before any request`, () => {
        const refused = unsupportedByEngine(defaultSamplingParams({ [key]: CHANGED[key] }), undefined);
        expect(refused.length).toBeGreaterThan(0);
      });
    }
  }
});
