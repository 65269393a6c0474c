import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { parseJsonBody } from '../../src/protocol/json.js';
import { buildRequestBody, curlCommand, inPageCurlNote, shellQuote, toJson, type RequestDraft } from '../../public/src/request.js';
import { defaultState } from '../../public/src/store.js';

function draft(overrides: Partial<RequestDraft> = {}): RequestDraft {
  const state = defaultState();
  return {
    api: 'chat',
    model: 'stories260k',
    prompt: state.prompt,
    messages: state.messages,
    stream: false,
    includeUsage: true,
    params: { ...state.params, max_tokens: '' },
    ...overrides,
  };
}

describe('buildRequestBody', () => {
  it('sends only the parameters that were set, for the API at hand', () => {
    const body = buildRequestBody(draft({ api: 'completions', params: { temperature: '0.5', min_p: '0.1', ignore_eos: true, skip_special_tokens: true } }));
    expect(body).toEqual({ model: 'stories260k', prompt: defaultState().prompt, temperature: 0.5, min_p: 0.1, ignore_eos: true });
  });

  it('leaves OpenAI-only parameters out of /generate', () => {
    const body = buildRequestBody(draft({ api: 'generate', model: '', params: { min_p: '0.1', min_tokens: '3', top_k: '5' } }));
    expect(body).toEqual({ prompt: defaultState().prompt, top_k: 5 });
  });

  it('sends chat messages and asks for the usage chunk when streaming', () => {
    const body = buildRequestBody(draft({ stream: true, messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }] }));
    expect(body).toEqual({
      model: 'stories260k',
      messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
  });

  it('sends /generate a LoRA id only when one is given (the field is optional there)', () => {
    expect(buildRequestBody(draft({ api: 'generate', model: '' }))).not.toHaveProperty('model');
    expect(buildRequestBody(draft({ api: 'generate', model: 'my-lora' })).model).toBe('my-lora');
  });
});

describe('toJson', () => {
  it('writes a uint64 seed as an exact integer the server reads back unchanged', () => {
    const text = toJson({ seed: 18446744073709551615n, ids: [1n, 2], note: 'bigint:1' });
    expect(text).toBe('{"seed":18446744073709551615,"ids":[1,2],"note":"bigint:1"}');
    expect(parseJsonBody(text)).toEqual({ seed: 18446744073709551615n, ids: [1, 2], note: 'bigint:1' });
  });

  it('does not mistake user text that looks like the internal marker for a bigint', () => {
    for (const prompt of ['bigint5', '"bigint5"', 'bigint_5', 'bigint-1']) {
      const text = toJson({ prompt, seed: 7n });
      expect(JSON.parse(text)).toEqual({ prompt, seed: 7 });
    }
  });
});

/** Runs the command in a POSIX shell with `curl` replaced by a function printing its arguments. */
function curlArguments(command: string): string[] {
  const script = `curl() { for a in "$@"; do printf '%s\\0' "$a"; done; }\n${command}`;
  return execFileSync('sh', ['-c', script], { encoding: 'utf8' }).split('\0').slice(0, -1);
}

describe('curlCommand', () => {
  it('quotes the body so a shell passes it to curl byte for byte', () => {
    const body = toJson({ model: 'm', prompt: `It's "quoted" $HOME \`cmd\` \\ and a\nnewline — ünïcode` });
    const args = curlArguments(curlCommand('http://127.0.0.1:8080/v1/completions', 'completions', body, true));
    expect(args).toEqual(['-N', 'http://127.0.0.1:8080/v1/completions', '-H', 'Content-Type: application/json', '-d', body]);
  });

  it('addresses the API path on the page’s origin', () => {
    const args = curlArguments(curlCommand('http://example.test:9/some/page', 'generate', '{}', false));
    expect(args.slice(0, 1)).toEqual(['http://example.test:9/generate']);
  });

  it('shellQuote survives single quotes', () => {
    expect(execFileSync('sh', ['-c', `printf %s ${shellQuote("a'b''c")}`], { encoding: 'utf8' })).toBe("a'b''c");
  });
});

describe("the curl tab's note in in-page mode", () => {
  it('does not claim the server serves a model only the page runs (a .gguf picked in the page)', () => {
    const gguf = inPageCurlNote('tiny-llama-Q4_K_M.gguf', 'stories260k');
    expect(gguf).toContain('which the server does not serve (it serves "stories260k")');
    expect(gguf).not.toContain('The same command works against the server');
    expect(inPageCurlNote('stories260k', 'stories260k')).toContain('The same command works against the server');
    // No server answered /v1/models (a static host), or the page's model is still loading.
    expect(inPageCurlNote('stories260k', null)).toContain('runs inside this page');
    expect(inPageCurlNote(null, 'stories260k')).toContain('runs inside this page');
  });
});
