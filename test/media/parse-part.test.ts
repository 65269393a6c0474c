/**
 * Prompt parts → media requests: the MindIE string form, the OpenAI object form, chat
 * content parts, and the errors a client sees for malformed parts.
 */
import { describe, expect, it } from 'vitest';
import { MediaError } from '../../src/media/errors.js';
import { mediaRequestsFromMessages, mediaRequestsFromPrompt, parseMediaPart } from '../../src/media/parse-part.js';
import { ProtocolError } from '../../src/common/protocol-error.js';

function errorOf(fn: () => unknown): MediaError {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as ProtocolError).kind).toBe('invalid_request');
    return error as MediaError;
  }
  throw new Error('expected an error');
}

describe('parseMediaPart', () => {
  it('reads the MindIE form with a path, a URL and a data URL', () => {
    const local = parseMediaPart({ type: 'image_url', image_url: '/data/multimodal_inputs/test.png' }, 'prompt[1]');
    expect(local).toEqual({
      type: 'media',
      media: { kind: 'image', ref: { type: 'local', path: '/data/multimodal_inputs/test.png' }, param: 'prompt[1].image_url', partType: 'image_url' },
    });
    const remote = parseMediaPart({ type: 'video_url', video_url: 'https://Media.Example.com/a.mp4' }, 'prompt[0]');
    expect(remote.type === 'media' && remote.media.ref.type === 'remote' && remote.media.ref.url.hostname).toBe('media.example.com');
    const data = parseMediaPart({ type: 'image_url', image_url: 'data:image/jpeg;base64,/9j/4A==' }, 'prompt[0]');
    expect(data.type === 'media' && data.media.ref).toEqual({ type: 'data', mimeType: 'image/jpeg', base64: '/9j/4A' });
  });

  it('reads the OpenAI object form in both APIs and names the url field', () => {
    const part = parseMediaPart({ type: 'audio_url', audio_url: { url: 'https://a.example/x.wav' } }, 'messages[0].content[1]');
    expect(part.type === 'media' && [part.media.kind, part.media.param]).toEqual(['audio', 'messages[0].content[1].audio_url.url']);
    const image = parseMediaPart({ type: 'image_url', image_url: { url: 'https://a.example/x.png', detail: 'low' } }, 'prompt[2]');
    expect(image.type === 'media' && image.media.param).toBe('prompt[2].image_url.url');
  });

  it('reads input_audio with base64 data', () => {
    const part = parseMediaPart({ type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'wav' } }, 'messages[0].content[0]');
    expect(part.type === 'media' && part.media).toEqual({
      kind: 'audio',
      ref: { type: 'inline', base64: 'UklGRg', declaredFormat: 'wav' },
      param: 'messages[0].content[0].input_audio.data',
      partType: 'input_audio',
    });
  });

  it('returns text parts and refuses empty ones', () => {
    expect(parseMediaPart({ type: 'text', text: 'hi' }, 'prompt[0]')).toEqual({ type: 'text', text: 'hi', param: 'prompt[0]' });
    const error = errorOf(() => parseMediaPart({ type: 'text', text: '' }, 'prompt[3]'));
    expect(error.param).toBe('prompt[3].text');
    expect(error.message).toBe('prompt[3].text must be a non-empty string');
  });

  it('refuses unknown types, non-objects and missing type', () => {
    const unknown = errorOf(() => parseMediaPart({ type: 'image_file', image_file: 'x' }, 'prompt[1]'));
    expect(unknown.param).toBe('prompt[1].type');
    expect(unknown.message).toContain('"image_file"');
    expect(errorOf(() => parseMediaPart('hello', 'prompt[0]')).param).toBe('prompt[0]');
    expect(errorOf(() => parseMediaPart({ image_url: 'x' }, 'prompt[0]')).param).toBe('prompt[0].type');
  });

  it('refuses missing, empty and malformed URLs with the field as param', () => {
    expect(errorOf(() => parseMediaPart({ type: 'image_url' }, 'prompt[1]')).param).toBe('prompt[1].image_url');
    expect(errorOf(() => parseMediaPart({ type: 'image_url', image_url: { href: 'x' } }, 'prompt[1]')).param).toBe('prompt[1].image_url.url');
    const empty = errorOf(() => parseMediaPart({ type: 'image_url', image_url: '  ' }, 'prompt[1]'));
    expect(empty.message).toBe('prompt[1].image_url: must not be empty');
    const bad = errorOf(() => parseMediaPart({ type: 'image_url', image_url: 'http://exa mple.com/x.png' }, 'prompt[1]'));
    expect([bad.reason, bad.param]).toEqual(['malformed_part', 'prompt[1].image_url']);
    expect(bad.message).toContain('is not a valid URL');
    const scheme = errorOf(() => parseMediaPart({ type: 'video_url', video_url: { url: 'ftp://x/a.mp4' } }, 'messages[2].content[0]'));
    expect([scheme.reason, scheme.param]).toEqual(['scheme_not_allowed', 'messages[2].content[0].video_url.url']);
  });

  it('refuses a malformed base64 data URL and a data URL of another kind', () => {
    const bad = errorOf(() => parseMediaPart({ type: 'image_url', image_url: 'data:image/jpeg;base64,%%%' }, 'prompt[0]'));
    expect([bad.reason, bad.param]).toEqual(['malformed_data_url', 'prompt[0].image_url']);
    const kind = errorOf(() => parseMediaPart({ type: 'audio_url', audio_url: 'data:image/png;base64,iVBO' }, 'prompt[0]'));
    expect(kind.message).toContain('"image/png" but the part is an audio');
  });

  it('refuses input_audio with a bad format or bad base64', () => {
    expect(errorOf(() => parseMediaPart({ type: 'input_audio', input_audio: { data: 'UklG', format: 'ogg' } }, 'm')).param).toBe('m.input_audio.format');
    expect(errorOf(() => parseMediaPart({ type: 'input_audio', input_audio: { data: 'not base64!', format: 'wav' } }, 'm')).reason).toBe('malformed_data_url');
  });
});

describe('request helpers', () => {
  it('lists the media parts of a prompt with their params', () => {
    const media = mediaRequestsFromPrompt([
      { type: 'text', text: 'My name is Olivier and I' },
      { type: 'image_url', image_url: '/xxxx/test.png' },
      { type: 'audio_url', audio_url: 'a.wav' },
    ]);
    expect(media.map((m) => [m.param, m.kind])).toEqual([['prompt[1].image_url', 'image'], ['prompt[2].audio_url', 'audio']]);
  });

  it('lists the media parts of chat messages, skipping string contents and refusals', () => {
    const media = mediaRequestsFromMessages([
      { role: 'system', content: 'be brief' },
      { role: 'user', content: [{ type: 'text', text: 'what is this?' }, { type: 'image_url', image_url: { url: 'https://a.example/1.png' } }] },
      { role: 'assistant', content: [{ type: 'refusal', refusal: 'no' }] },
      { role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'UklGRg==', format: 'mp3' } }] },
    ]);
    expect(media.map((m) => m.param)).toEqual(['messages[1].content[1].image_url.url', 'messages[3].content[0].input_audio.data']);
  });
});
