/**
 * Syntax of a media reference string, before any I/O: which scheme it uses and whether
 * it is well-formed. Accepted:
 *   http://… https://…        remote, checked against the whitelist when fetched;
 *   data:<type>/<sub>;base64,… base64 payload whose MIME type is of the part's kind;
 *   file:///path, /path, name   a local file, which must resolve inside the media dir
 *                               (relative paths are relative to the media dir).
 * Every other scheme is refused.
 */
import { canonicalBase64 } from './base64.js';
import { mediaError } from './errors.js';
import type { MediaKind, MediaRef } from './types.js';

const SCHEME = /^([a-zA-Z][a-zA-Z0-9+.-]*):/;

function parseDataUrl(text: string, kind: MediaKind): MediaRef {
  const comma = text.indexOf(',');
  if (comma === -1) throw mediaError('malformed_data_url', 'the data: URL has no "," before its payload');
  const header = text.slice('data:'.length, comma).trim().toLowerCase();
  const params = header.split(';').map((s) => s.trim());
  const mimeType = params[0];
  if (!params.slice(1).includes('base64')) {
    throw mediaError('malformed_data_url', `the data: URL must be base64-encoded ("data:${kind}/...;base64,...")`);
  }
  if (!mimeType.startsWith(`${kind}/`)) {
    throw mediaError(
      'malformed_data_url',
      `the data: URL has MIME type "${mimeType || '(none)'}" but the part is ${kind === 'video' ? 'a' : 'an'} ${kind} ("${kind}/...")`,
    );
  }
  const base64 = canonicalBase64(text.slice(comma + 1));
  if (base64 === null || base64.length === 0) throw mediaError('malformed_data_url', 'the data: URL payload is not valid base64');
  return { type: 'data', mimeType, base64 };
}

function parseUrl(text: string): URL {
  try {
    return new URL(text);
  } catch {
    throw mediaError('malformed_part', `"${preview(text)}" is not a valid URL`);
  }
}

/** Shortens user input quoted in messages. */
export function preview(text: string, max = 80): string {
  return text.length <= max ? text : `${text.slice(0, max)}…`;
}

/** Throws MediaError (malformed_part, scheme_not_allowed, malformed_data_url). */
export function parseMediaRef(text: string, kind: MediaKind): MediaRef {
  if (text.trim() === '') throw mediaError('malformed_part', 'must not be empty');
  if (text.includes('\0')) throw mediaError('malformed_part', 'must not contain NUL characters');
  const scheme = SCHEME.exec(text.trimStart())?.[1].toLowerCase();
  if (scheme === undefined) return { type: 'local', path: text };
  switch (scheme) {
    case 'http':
    case 'https': {
      const url = parseUrl(text);
      if (url.hostname === '') throw mediaError('malformed_part', `"${preview(text)}" has no host`);
      return { type: 'remote', url };
    }
    case 'data':
      return parseDataUrl(text.trimStart(), kind);
    case 'file': {
      const url = parseUrl(text);
      if (url.hostname !== '' && url.hostname !== 'localhost') {
        throw mediaError('scheme_not_allowed', `file: URLs must name a local path (file:///...), got host "${url.hostname}"`);
      }
      let path: string;
      try {
        path = decodeURIComponent(url.pathname);
      } catch {
        throw mediaError('malformed_part', `"${preview(text)}" is not a valid file: URL`);
      }
      if (path.includes('\0')) throw mediaError('malformed_part', 'must not contain NUL characters');
      return { type: 'local', path };
    }
    default:
      throw mediaError(
        'scheme_not_allowed',
        `the URL scheme "${scheme}:" is not allowed; use http(s)://, a base64 data: URL, or a file in the media directory`,
      );
  }
}
