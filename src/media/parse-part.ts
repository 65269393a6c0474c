/**
 * Prompt parts → media requests. Accepts MindIE /generate parts
 * ({"type":"image_url","image_url":"<url or path>"}), the OpenAI object form
 * ({"type":"image_url","image_url":{"url":"..."}}) in either API, and OpenAI chat's
 * {"type":"input_audio","input_audio":{"data":"<base64>","format":"wav"}}.
 */
import { canonicalBase64 } from './base64.js';
import { MediaError, mediaError } from './errors.js';
import { parseMediaRef } from './media-ref.js';
import type { MediaKind, MediaRequest } from './types.js';

export type ParsedPart = { type: 'text'; text: string; param: string } | { type: 'media'; media: MediaRequest };

const URL_PART_KINDS: Readonly<Record<string, MediaKind>> = {
  image_url: 'image',
  audio_url: 'audio',
  video_url: 'video',
};
const KNOWN_TYPES = ['text', 'image_url', 'audio_url', 'video_url', 'input_audio'];
const INPUT_AUDIO_FORMATS = ['wav', 'mp3', 'flac'];

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function fail(param: string, message: string, reason: 'malformed_part' = 'malformed_part'): never {
  throw mediaError(reason, `${param} ${message}`, param);
}

function attribute(error: unknown, param: string): never {
  if (error instanceof MediaError) throw error.forParam(param);
  throw error;
}

function urlPart(part: Record<string, unknown>, type: string, kind: MediaKind, param: string): MediaRequest {
  const value = part[type];
  let text: unknown;
  let where: string;
  if (typeof value === 'string') {
    text = value;
    where = `${param}.${type}`;
  } else if (isObject(value)) {
    text = value.url;
    where = `${param}.${type}.url`;
    if (typeof text !== 'string') fail(where, 'must be a string (the media URL or path)');
  } else {
    fail(`${param}.${type}`, 'must be a URL string or an object with a "url"');
  }
  try {
    return { kind, ref: parseMediaRef(text as string, kind), param: where, partType: type };
  } catch (error) {
    attribute(error, where);
  }
}

function inputAudioPart(part: Record<string, unknown>, param: string): MediaRequest {
  const where = `${param}.input_audio`;
  const value = part.input_audio;
  if (!isObject(value)) fail(where, 'must be an object with "data" (base64) and "format"');
  if (typeof value.format !== 'string' || !INPUT_AUDIO_FORMATS.includes(value.format)) {
    fail(`${where}.format`, `must be one of ${INPUT_AUDIO_FORMATS.map((f) => `"${f}"`).join(', ')}`);
  }
  if (typeof value.data !== 'string' || value.data.trim() === '') fail(`${where}.data`, 'must be a non-empty base64 string');
  const base64 = canonicalBase64(value.data);
  if (base64 === null) throw mediaError('malformed_data_url', `${where}.data is not valid base64`, `${where}.data`);
  return { kind: 'audio', ref: { type: 'inline', base64, declaredFormat: value.format }, param: `${where}.data`, partType: 'input_audio' };
}

/**
 * One part of a prompt list or of a chat message's content. `param` names the part
 * ("prompt[1]", "messages[0].content[2]"); errors name the field inside it.
 */
export function parseMediaPart(part: unknown, param: string): ParsedPart {
  if (!isObject(part)) fail(param, 'must be an object with a "type"');
  const type = part.type;
  if (typeof type !== 'string') fail(`${param}.type`, `must be one of ${KNOWN_TYPES.map((t) => `"${t}"`).join(', ')}`);
  if (type === 'text') {
    if (typeof part.text !== 'string' || part.text === '') fail(`${param}.text`, 'must be a non-empty string');
    return { type: 'text', text: part.text, param };
  }
  const kind = URL_PART_KINDS[type];
  if (kind !== undefined) return { type: 'media', media: urlPart(part, type, kind, param) };
  if (type === 'input_audio') return { type: 'media', media: inputAudioPart(part, param) };
  fail(`${param}.type`, `is "${type}", which is not a known part type (${KNOWN_TYPES.map((t) => `"${t}"`).join(', ')})`);
}

/** The media parts of a MindIE prompt list, in order. Throws on the first malformed part. */
export function mediaRequestsFromPrompt(parts: readonly unknown[], prefix = 'prompt'): MediaRequest[] {
  return parts.flatMap((part, i) => {
    const parsed = parseMediaPart(part, `${prefix}[${i}]`);
    return parsed.type === 'media' ? [parsed.media] : [];
  });
}

/**
 * The media parts of chat messages, in order. String contents have none; "refusal"
 * parts (assistant turns echoed back) are text.
 */
export function mediaRequestsFromMessages(messages: readonly unknown[]): MediaRequest[] {
  const out: MediaRequest[] = [];
  messages.forEach((message, i) => {
    if (!isObject(message) || !Array.isArray(message.content)) return;
    message.content.forEach((part: unknown, j: number) => {
      if (isObject(part) && part.type === 'refusal') return;
      const parsed = parseMediaPart(part, `messages[${i}].content[${j}]`);
      if (parsed.type === 'media') out.push(parsed.media);
    });
  });
  return out;
}
