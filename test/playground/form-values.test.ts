import { describe, expect, it } from 'vitest';
import { escapeStop, fromJsonValue, toJsonValue, unescapeStop } from '../../public/src/form-values.js';

describe('toJsonValue', () => {
  it('leaves empty and blank fields out of the request', () => {
    for (const kind of ['float', 'int', 'seed', 'stop', 'token-ids', 'json'] as const) {
      expect(toJsonValue(kind, '')).toBeUndefined();
      expect(toJsonValue(kind, '   ')).toBeUndefined();
    }
  });

  it('reads numbers the way JSON would carry them', () => {
    expect(toJsonValue('float', '0.7')).toBe(0.7);
    expect(toJsonValue('float', '.5')).toBe(0.5);
    expect(toJsonValue('float', '1e-3')).toBe(0.001);
    expect(toJsonValue('float', ' -2 ')).toBe(-2);
    expect(toJsonValue('int', '64')).toBe(64);
  });

  it('sends malformed numbers as text so the server can say what is wrong', () => {
    expect(toJsonValue('float', '0,7')).toBe('0,7');
    expect(toJsonValue('int', 'abc')).toBe('abc');
  });

  it('keeps integers beyond 2^53 exact as bigint', () => {
    expect(toJsonValue('int', '9007199254740993')).toBe(9007199254740993n);
    expect(toJsonValue('seed', '18446744073709551615')).toBe(18446744073709551615n);
    expect(toJsonValue('seed', '-1')).toBe(-1n);
    expect(toJsonValue('seed', '12.5')).toBe('12.5');
  });

  it('sends a boolean only when it differs from the server default', () => {
    expect(toJsonValue('bool', false, false)).toBeUndefined();
    expect(toJsonValue('bool', true, false)).toBe(true);
    expect(toJsonValue('bool', true, true)).toBeUndefined();
    expect(toJsonValue('bool', false, true)).toBe(false);
  });

  it('reads one stop string per line, with escapes for invisible characters', () => {
    expect(toJsonValue('stop', 'The end\n\\n\n  \nsaid \\\\ "hi"')).toEqual(['The end', '\n', 'said \\ "hi"']);
    // Spaces are part of a stop string.
    expect(toJsonValue('stop', ' the ')).toEqual([' the ']);
  });

  it('reads token ids separated by commas or spaces, keeping bad entries for the server to report', () => {
    expect(toJsonValue('token-ids', '2, 13 ,29')).toEqual([2, 13, 29]);
    expect(toJsonValue('token-ids', '2 x')).toEqual([2, 'x']);
  });

  it('parses JSON schemas, and sends text that is not JSON as a string (guided_json accepts both)', () => {
    expect(toJsonValue('json', '{"type":"object"}')).toEqual({ type: 'object' });
    expect(toJsonValue('json', '{oops')).toBe('{oops');
  });

  it('sends a regular expression as typed, even one that reads as JSON', () => {
    expect(toJsonValue('text', '123')).toBe('123');
    expect(toJsonValue('text', ' \\d+ ')).toBe(' \\d+ ');
    expect(toJsonValue('text', '   ')).toBeUndefined();
  });
});

describe('stop escapes', () => {
  it('round-trips any text through escape and unescape', () => {
    for (const text of ['a\nb', '\\n literally', 'tab\there', 'back\\slash', '\r\n', 'plain']) {
      expect(unescapeStop(escapeStop(text))).toBe(text);
      expect(escapeStop(text)).not.toMatch(/[\n\t\r]/);
    }
  });

  it('fromJsonValue is the inverse of toJsonValue for stop lists', () => {
    const stops = ['\n\n', 'The end.', 'a\\b'];
    expect(toJsonValue('stop', fromJsonValue('stop', stops) as string)).toEqual(stops);
  });
});
