import { describe, expect, it, vi } from 'vitest';
import { EngineOverloadedError, EngineRequestError } from '../../src/engine/errors.js';
import { errorResponse, HttpError, mapError, modelNotFound, streamingErrorPayload } from '../../src/http/errors.js';
import { ProtocolError, invalidRequest } from '../../src/common/protocol-error.js';
import { ChatTemplateError } from '../../src/tokenizer/chat-template.js';

describe('mapError', () => {
  it('maps each ProtocolError kind to its status and vLLM error type', () => {
    expect(mapError(invalidRequest('top_p must be ...', 'top_p'))).toEqual({
      status: 400,
      headers: {},
      body: {
        object: 'error',
        message: 'top_p must be ...',
        type: 'BadRequestError',
        param: 'top_p',
        code: 400,
        error: { message: 'top_p must be ...', type: 'BadRequestError', param: 'top_p', code: 400 },
      },
    });
    expect(mapError(new ProtocolError('not_found', 'no such adapter')).status).toBe(404);
    expect(mapError(new ProtocolError('not_found', 'x')).body.type).toBe('NotFoundError');
    const overloaded = mapError(new ProtocolError('overloaded', 'busy'));
    expect(overloaded.status).toBe(503);
    expect(overloaded.headers['retry-after']).toBeDefined();
  });

  it("uses vLLM's wording for an unknown model", () => {
    expect(mapError(modelNotFound('gpt-4')).body).toEqual({
      object: 'error',
      message: 'The model `gpt-4` does not exist.',
      type: 'NotFoundError',
      param: null,
      code: 404,
      error: { message: 'The model `gpt-4` does not exist.', type: 'NotFoundError', param: null, code: 404 },
    });
  });

  it('reports engine refusals as 400 and engine overload as 503 with its Retry-After', () => {
    expect(mapError(new EngineRequestError('Token id 999 is out of vocabulary')).status).toBe(400);
    expect(mapError(new ChatTemplateError('roles must alternate')).status).toBe(400);
    const busy = mapError(new EngineOverloadedError('busy', 7));
    expect(busy.status).toBe(503);
    expect(busy.headers['retry-after']).toBe('7');
  });

  it('keeps the status of an HttpError', () => {
    expect(mapError(new HttpError(413, 'RequestEntityTooLargeError', 'too big')).status).toBe(413);
  });

  it('reports an unexpected error as a 500 without its stack', () => {
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    const error = new TypeError('cannot read properties of undefined');
    const mapped = mapError(error);
    expect(mapped.status).toBe(500);
    expect(mapped.body.type).toBe('InternalServerError');
    expect(mapped.body.message).toContain('cannot read properties of undefined');
    expect(JSON.stringify(mapped.body)).not.toContain(error.stack!.split('\n')[1]!.trim());
    logged.mockRestore();
  });
});

describe('error responses', () => {
  it('is a JSON response with the status of the error', async () => {
    const response = errorResponse(invalidRequest('bad', 'prompt'));
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const info = { message: 'bad', type: 'BadRequestError', param: 'prompt', code: 400 };
    // vLLM's flat fields (the specified shape) and OpenAI's nested form, which the clients read.
    expect(await response.json()).toEqual({ object: 'error', ...info, error: info });
  });

  it('sends the same body as an in-stream error event: its "error" key is what OpenAI clients raise', () => {
    const info = { message: 'bad', type: 'BadRequestError', param: null, code: 400 };
    expect(JSON.parse(streamingErrorPayload(invalidRequest('bad')))).toEqual({ object: 'error', ...info, error: info });
  });
});
