import { describe, expect, it } from 'vitest';
import { parseJsonBody } from '../../src/protocol/json.js';
import {
  MindieGenerateRequestSchema,
  mindieMediaParts,
  mindiePromptText,
  type MindieGenerateRequest,
} from '../../src/protocol/mindie.js';
import { parseRequest } from '../../src/protocol/validate.js';
import { expectInvalidRequest } from './expect-error.js';

/** Parses a body given as JSON text, as the HTTP layer does (big integers stay exact). */
function parseMindie(json: string): MindieGenerateRequest {
  return parseRequest(MindieGenerateRequestSchema, parseJsonBody(json));
}

/** `{"prompt": "hi", <param>: <literal JSON>}` */
function withParam(param: string, literal: string): string {
  return param === 'prompt' ? `{"prompt": ${literal}}` : `{"prompt": "hi", ${JSON.stringify(param)}: ${literal}}`;
}

const str = (length: number, ch = 'x') => JSON.stringify(ch.repeat(length));
const FOUR_MB = 4 * 1024 * 1024;

/** [param, values just inside the spec's range, values just outside] as JSON literals. */
const BOUNDARIES: [string, string[], string[]][] = [
  ['prompt', ['"a"', str(FOUR_MB), '[{"type": "text", "text": "a"}]', '[{"type": "image_url", "image_url": "/x.png"}]'], ['""', str(FOUR_MB + 1), '[]', '5', 'null', '{"text": "a"}']],
  ['max_tokens', ['1', '2147483647', '20.0'], ['0', '2147483648', '-1', '1.5', '"10"', 'true']],
  ['repetition_penalty', ['0.000001', '1e-300', '2.0'], ['0', '0.0', '2.000001', '-1', '"1"']],
  ['presence_penalty', ['-2.0', '2.0', '0'], ['-2.000001', '2.000001']],
  ['frequency_penalty', ['-2.0', '2.0', '0'], ['-2.000001', '2.000001']],
  ['temperature', ['0', '0.0', '0.001', '2.0', '100'], ['-0.000001', '-1', '"hot"']],
  ['top_p', ['0.0000011', '1.0', '0.5'], ['0.000001', '0', '1.0000001', '-0.5']],
  ['top_k', ['1', '2147483647'], ['0', '-1', '2147483648', '1.5']],
  ['seed', ['1', '18446744073709551615', '9007199254740993'], ['0', '18446744073709551616', '-1', '1.5', '"42"']],
  ['stream', ['true', 'false'], ['"true"', '1']],
  ['stop', ['"a"', str(32768), '["a", "b"]', `[${str(16384)}, ${str(16384)}]`, '[]', str(32768, '😀')], ['""', str(32769), '[""]', `[${str(16384)}, ${str(16385)}]`, '5', '[1]', str(32769, '😀')]],
  ['stop_token_ids', ['[1, 2]', '[]', '[2147483647, -2147483648]', '[1.5, "x", null]'], ['5', '"1"', '{}']],
  ['model', ['"my-lora"', '"None"'], ['5', 'true']],
  ['include_stop_str_in_output', ['true', 'false'], ['"yes"', '0']],
  ['skip_special_tokens', ['true', 'false'], ['"yes"', '0']],
  ['ignore_eos', ['true', 'false'], ['"yes"', '0']],
  ['best_of', ['1', '128'], ['0', '129', '1.5']],
  ['n', ['1', '128'], ['0', '129', '1.5']],
];

describe('MindIE /generate request: every parameter at its boundaries', () => {
  for (const [param, inside, outside] of BOUNDARIES) {
    describe(param, () => {
      it.each(inside.map((v) => [v.length > 60 ? `${v.slice(0, 30)}...(${v.length} chars)` : v, v]))(
        'accepts %s',
        (_label, literal) => {
          expect(() => parseMindie(withParam(param, literal))).not.toThrow();
        },
      );
      it.each(outside.map((v) => [v.length > 60 ? `${v.slice(0, 30)}...(${v.length} chars)` : v, v]))(
        'refuses %s, naming the parameter',
        (_label, literal) => {
          const error = expectInvalidRequest(() => parseMindie(withParam(param, literal)));
          expect(error.param?.startsWith(param)).toBe(true);
          expect(error.message).toContain(param);
          expect(error.message).not.toMatch(/zod|ZodError|\n\s+at /);
        },
      );
    });
  }

  it('accepts null as "not given" for every optional parameter', () => {
    const nulls = BOUNDARIES.map(([p]) => p).filter((p) => p !== 'prompt');
    const body = `{"prompt": "hi", ${nulls.map((p) => `"${p}": null`).join(', ')}}`;
    const req = parseMindie(body);
    expect(req.max_tokens).toBeUndefined();
    expect(req.seed).toBeUndefined();
    expect(req.stream).toBe(false);
    expect(req.skip_special_tokens).toBe(true);
    expect(req.stop).toEqual([]);
    expect(req.stop_token_ids).toEqual([]);
  });

  it('requires prompt', () => {
    const error = expectInvalidRequest(() => parseMindie('{"max_tokens": 5}'));
    expect(error.param).toBe('prompt');
    expect(error.message).toBe('prompt is required');
  });

  it('refuses a body that is not an object', () => {
    expect(expectInvalidRequest(() => parseMindie('[1]')).message).toMatch(/request body must be a JSON object/);
  });

  it('ignores unknown fields, like the vLLM legacy server', () => {
    expect(parseMindie('{"prompt": "hi", "frobnicate": 3}')).not.toHaveProperty('frobnicate');
  });

  it('states the range in the message', () => {
    expect(expectInvalidRequest(() => parseMindie(withParam('top_p', '0'))).message).toBe(
      'top_p must be a number in (1e-06, 1.0], got 0',
    );
    expect(expectInvalidRequest(() => parseMindie(withParam('temperature', '-1'))).message).toBe(
      'temperature must be a number >= 0.0, got -1',
    );
    expect(expectInvalidRequest(() => parseMindie(withParam('seed', '18446744073709551616'))).message).toBe(
      'seed must be an integer in (0, 18446744073709551615], got 18446744073709551616',
    );
  });
});

describe('MindIE /generate request: normalisation', () => {
  it('keeps uint64 seeds exact', () => {
    expect(parseMindie(withParam('seed', '18446744073709551615')).seed).toBe(2n ** 64n - 1n);
    expect(parseMindie(withParam('seed', '9007199254740993')).seed).toBe(2n ** 53n + 1n);
    expect(parseMindie(withParam('seed', '42')).seed).toBe(42n);
  });

  it('normalises stop to a list; an empty list means none', () => {
    expect(parseMindie(withParam('stop', '"END"')).stop).toEqual(['END']);
    expect(parseMindie(withParam('stop', '["a", "b"]')).stop).toEqual(['a', 'b']);
    expect(parseMindie(withParam('stop', '[]')).stop).toEqual([]);
    expect(parseMindie('{"prompt": "hi"}').stop).toEqual([]);
  });

  it('drops stop_token_ids elements that are not int32, keeping the rest in order', () => {
    const req = parseMindie(withParam('stop_token_ids', '[5, 2.5, "7", 2147483648, null, -3, 18446744073709551615, 9, true, [1]]'));
    expect(req.stop_token_ids).toEqual([5, -3, 9]);
  });

  it('reads the spec example\'s model "None" as no LoRA adapter', () => {
    expect(parseMindie(withParam('model', '"None"')).model).toBeUndefined();
    expect(parseMindie(withParam('model', '"adapter-1"')).model).toBe('adapter-1');
  });

  it('requires best_of >= n', () => {
    expect(() => parseMindie('{"prompt": "hi", "n": 2, "best_of": 2}')).not.toThrow();
    expect(() => parseMindie('{"prompt": "hi", "n": 2, "best_of": null}')).not.toThrow();
    const error = expectInvalidRequest(() => parseMindie('{"prompt": "hi", "n": 3, "best_of": 2}'));
    expect(error.param).toBe('best_of');
    expect(error.message).toMatch(/best_of must be greater than or equal to n/);
  });

  it('accepts the spec\'s own request examples', () => {
    const single = parseMindie(`{
      "prompt": "My name is Olivier and I", "max_tokens": 20, "repetition_penalty": 1.03,
      "presence_penalty": 1.2, "frequency_penalty": 1.2, "temperature": 0.5, "top_p": 0.95,
      "top_k": 10, "seed": null, "stream": false, "stop": null, "stop_token_ids": null,
      "model": "None", "include_stop_str_in_output": false, "skip_special_tokens": true,
      "ignore_eos": false, "best_of": 2, "n": 2 }`);
    expect(single).toMatchObject({ max_tokens: 20, top_k: 10, best_of: 2, n: 2, stream: false });
    const multimodal = parseMindie(`{
      "prompt": [{"type": "text", "text": "My name is Olivier and I"}, {"type": "image_url", "image_url": "/xxxx/test.png"}],
      "max_tokens": 20, "best_of": null, "n": null, "model": "None" }`);
    expect(mindiePromptText(multimodal.prompt)).toBe('My name is Olivier and I');
    expect(mindieMediaParts(multimodal.prompt)).toEqual([{ index: 1, type: 'image_url' }]);
  });

  it('accepts the OpenAI object form {"url": ...} for media parts too, keeping its shape', () => {
    const req = parseMindie(`{"prompt": [
      {"type": "text", "text": "a"},
      {"type": "image_url", "image_url": {"url": "https://h/x.png", "detail": "low"}},
      {"type": "video_url", "video_url": {"url": "v.mp4"}},
      {"type": "audio_url", "audio_url": "a.wav"}]}`);
    expect(req.prompt).toEqual([
      { type: 'text', text: 'a' },
      { type: 'image_url', image_url: { url: 'https://h/x.png' } },
      { type: 'video_url', video_url: { url: 'v.mp4' } },
      { type: 'audio_url', audio_url: 'a.wav' },
    ]);
    expect(mindiePromptText(req.prompt)).toBe('a');
    expect(mindieMediaParts(req.prompt)).toEqual([
      { index: 1, type: 'image_url' },
      { index: 2, type: 'video_url' },
      { index: 3, type: 'audio_url' },
    ]);
  });

  it('validates each multimodal part for shape', () => {
    const cases: [string, string][] = [
      ['[{"type": "text", "text": ""}]', 'prompt[0].text'],
      ['[{"type": "text"}]', 'prompt[0].text'],
      ['[{"type": "text", "text": "a"}, {"type": "video_url", "video_url": ""}]', 'prompt[1].video_url'],
      ['[{"type": "audio_url", "audio_url": 5}]', 'prompt[0].audio_url'],
      ['[{"type": "hologram", "url": "x"}]', 'prompt[0].type'],
      ['[{"type": "image_url", "image_url": {"url": ""}}]', 'prompt[0].image_url.url'],
      ['[{"type": "image_url", "image_url": {"href": "x"}}]', 'prompt[0].image_url.url'],
      ['[{"type": "video_url", "video_url": {"url": 5}}]', 'prompt[0].video_url.url'],
      ['[{"type": "audio_url", "audio_url": ["a.wav"]}]', 'prompt[0].audio_url'],
      ['[{"type": "image_url"}]', 'prompt[0].image_url'],
    ];
    for (const [literal, param] of cases) {
      const error = expectInvalidRequest(() => parseMindie(withParam('prompt', literal)));
      expect(error.param).toBe(param);
      expect(error.message.startsWith(param)).toBe(true);
    }
  });

  it('states the rule for a media reference in the message', () => {
    const empty = expectInvalidRequest(() => parseMindie(withParam('prompt', '[{"type": "video_url", "video_url": ""}]')));
    expect(empty.message).toMatch(/^prompt\[0\]\.video_url must not be empty/);
    const emptyUrl = expectInvalidRequest(() => parseMindie(withParam('prompt', '[{"type": "image_url", "image_url": {"url": ""}}]')));
    expect(emptyUrl.message).toMatch(/^prompt\[0\]\.image_url\.url must not be empty/);
    const missingUrl = expectInvalidRequest(() => parseMindie(withParam('prompt', '[{"type": "image_url", "image_url": {}}]')));
    expect(missingUrl.message).toMatch(/^prompt\[0\]\.image_url\.url must be a non-empty string/);
    const wrongType = expectInvalidRequest(() => parseMindie(withParam('prompt', '[{"type": "audio_url", "audio_url": 5}]')));
    expect(wrongType.message).toMatch(/^prompt\[0\]\.audio_url must be a non-empty string or an object with a non-empty "url"/);
  });
});
