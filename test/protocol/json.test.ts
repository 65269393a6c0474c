import { describe, expect, it } from 'vitest';
import { MAX_JSON_DEPTH, NATIVE_PARSE_MAX_CHARS, parseJsonBody } from '../../src/protocol/json.js';
import { expectInvalidRequest } from './expect-error.js';

describe('parseJsonBody: JSON.parse semantics', () => {
  const documents = [
    '{}',
    '[]',
    '  {"a" : [1, 2.5, -3e2, 0, -0.0, 1E+2, 1e-7], "b": {"c": {"d": [[], [{}]]}}}  ',
    '"plain"',
    'true',
    'false',
    'null',
    '\t\r\n 42 \n',
    String.raw`{"esc": "quote\" backslash\\ slash\/ \b\f\n\r\t", "u": "\u00e9\u4e2d\uD83D\uDE00", "lone": "\ud800x"}`,
    '{"dup": 1, "dup": 2}',
    '{"unicode": "中文 and emoji 😀 raw"}',
    '[1e400, -1e400, 123456789012345678901234567890.5, 1.0e20]',
    '{"digits in a string": "18446744073709551615"}',
  ];
  it.each(documents)('parses %s like JSON.parse', (text) => {
    expect(parseJsonBody(text)).toEqual(JSON.parse(text));
  });

  it('matches JSON.parse on generated documents', () => {
    let seed = 12345;
    const rand = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    const gen = (depth: number): unknown => {
      const r = rand();
      if (depth > 3 || r < 0.3) {
        const kinds = [
          () => Math.floor(rand() * 2e9) - 1e9,
          () => (rand() - 0.5) * 1e6,
          () => String.fromCharCode(...Array.from({ length: Math.floor(rand() * 8) }, () => Math.floor(rand() * 0x3000))),
          () => rand() < 0.5,
          () => null,
        ];
        return kinds[Math.floor(rand() * kinds.length)]!();
      }
      if (r < 0.65) return Array.from({ length: Math.floor(rand() * 4) }, () => gen(depth + 1));
      const obj: Record<string, unknown> = {};
      for (let i = 0; i < Math.floor(rand() * 4); i++) obj[`k${i}\n"${Math.floor(rand() * 100)}`] = gen(depth + 1);
      return obj;
    };
    for (let i = 0; i < 300; i++) {
      const text = JSON.stringify(gen(0), null, i % 2 === 0 ? 2 : undefined);
      expect(parseJsonBody(text)).toEqual(JSON.parse(text));
      // Sixteen digits in a row (here in a string) send the text through the parser rather
      // than JSON.parse: both paths give the same value.
      expect((parseJsonBody(`[${text}, "0000000000000000"]`) as unknown[])[0]).toEqual(JSON.parse(text));
    }
  });

  it('gives the same value for a body past the JSON.parse size as for one below it', () => {
    const items = Array.from({ length: 1200 }, (_, i) => ({ id: i, text: `item ${i}`, ok: i % 3 === 0, score: i / 7 }));
    const text = JSON.stringify({ items });
    expect(text.length).toBeGreaterThan(NATIVE_PARSE_MAX_CHARS);
    expect(parseJsonBody(text)).toEqual({ items });
    expect(parseJsonBody(JSON.stringify({ items: items.slice(0, 10) }))).toEqual({ items: items.slice(0, 10) });
  });

  it('keeps "__proto__" as an ordinary own property, as JSON.parse does', () => {
    const parsed = parseJsonBody('{"__proto__": {"polluted": true}, "a": 1}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(parsed)).toBe(Object.prototype);
    expect(Object.keys(parsed)).toEqual(['__proto__', 'a']);
    expect((parsed as { polluted?: boolean }).polluted).toBeUndefined();
    expect(({} as { polluted?: boolean }).polluted).toBeUndefined();
    // The same through the parser (sixteen digits in a row).
    const viaParser = parseJsonBody('{"__proto__": {"polluted": true}, "n": "0000000000000000"}') as Record<string, unknown>;
    expect(Object.getPrototypeOf(viaParser)).toBe(Object.prototype);
    expect(Object.keys(viaParser)).toEqual(['__proto__', 'n']);
  });
});

describe('parseJsonBody: integers beyond the safe range', () => {
  it('returns uint64 max exactly as a bigint', () => {
    expect(parseJsonBody('{"seed": 18446744073709551615}')).toEqual({ seed: 18446744073709551615n });
  });

  it('returns 2^53 + 1 exactly (JSON.parse would round it to 2^53)', () => {
    const parsed = parseJsonBody('[9007199254740993, -9007199254740993]') as bigint[];
    expect(parsed).toEqual([2n ** 53n + 1n, -(2n ** 53n + 1n)]);
    expect(JSON.parse('9007199254740993')).toBe(2 ** 53);
  });

  it('keeps safe integers as numbers, up to the boundary', () => {
    expect(parseJsonBody('[9007199254740991, -9007199254740991, 0, -0]')).toEqual([
      Number.MAX_SAFE_INTEGER,
      -Number.MAX_SAFE_INTEGER,
      0,
      -0,
    ]);
    expect(typeof parseJsonBody('9007199254740992')).toBe('bigint');
  });

  it('leaves float literals as numbers, even when large', () => {
    expect(parseJsonBody('18446744073709551615.0')).toBe(18446744073709551615.0);
    expect(parseJsonBody('1e19')).toBe(1e19);
  });

  it('finds big integers deep inside structures but not inside strings', () => {
    const parsed = parseJsonBody('{"a": [{"b": 123456789012345678901234567890}], "s": "123456789012345678901234567890"}');
    expect(parsed).toEqual({ a: [{ b: 123456789012345678901234567890n }], s: '123456789012345678901234567890' });
  });
});

describe('parseJsonBody: invalid JSON', () => {
  const cases: [string, string, RegExp][] = [
    ['empty body', '', /empty/],
    ['whitespace only', '  \n ', /empty/],
    ['missing value', '{"a": }', /line 1 column 7/],
    ['trailing comma in object', '{\n  "a": 1,\n}', /line 3 column 1/],
    ['trailing comma in array', '[1, 2, ]', /line 1 column 8/],
    ['single quotes', "{'a': 1}", /line 1 column 2/],
    ['unterminated string', '{"a": "abc', /unterminated string at line 1 column 7/],
    ['control character in string', '{"a": "x\ny"}', /control character U\+000A .*line 1 column 9/],
    ['invalid escape', '"\\x"', /invalid escape/],
    ['short unicode escape', '"\\u12"', /\\u escape/],
    ['leading zero', '01', /line 1 column 2/],
    ['bare minus', '-', /invalid number/],
    ['missing fraction digits', '1.', /line 1 column 2/],
    ['data after the value', '{} {}', /unexpected data after the JSON value at line 1 column 4/],
    ['NaN', 'NaN', /line 1 column 1/],
    ['truncated literal', 'tru', /line 1 column 1/],
    ['missing colon', '{"a" 1}', /':'/],
    ['unquoted key', '{a: 1}', /property name/],
    ['unclosed array', '[1, 2', /end of input/],
  ];
  it.each(cases)('%s', (_name, text, pattern) => {
    expect(() => JSON.parse(text)).toThrow();
    const error = expectInvalidRequest(() => parseJsonBody(text));
    expect(error.message).toMatch(/^Invalid JSON in the request body: /);
    expect(error.message).toMatch(pattern);
  });

  it('refuses nesting deeper than the limit and accepts nesting at the limit', () => {
    const deep = (n: number) => '['.repeat(n) + ']'.repeat(n);
    expect(() => parseJsonBody(deep(MAX_JSON_DEPTH))).not.toThrow();
    expect(expectInvalidRequest(() => parseJsonBody(deep(MAX_JSON_DEPTH + 1))).message).toMatch(/nesting/);
  });

  it('parses a 4 MiB string quickly', () => {
    const big = 'x'.repeat(4 * 1024 * 1024);
    const started = performance.now();
    expect(parseJsonBody(JSON.stringify({ prompt: big }))).toEqual({ prompt: big });
    expect(performance.now() - started).toBeLessThan(2000);
  });
});
