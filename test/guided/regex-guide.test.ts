import { beforeAll, describe, expect, it } from 'vitest';
import { ProtocolError } from '../../src/common/protocol-error.js';
import { accepts, acceptsBytes, compile, GUIDE_HOMES, useGuideHome } from './byte-tokenizer.js';

// Every suite twice: XGrammar on this thread (workerd, the page) and on Node's guide threads.
describe.each(GUIDE_HOMES)('XGrammar %s', (home) => {
beforeAll(() => useGuideHome(home));

/** The guide must accept exactly what JavaScript's RegExp matches in full. */
const CASES: Array<[pattern: string, samples: string[]]> = [
  ['abc', ['abc', 'ab', 'abcd', '']],
  ['a|bc|', ['a', 'bc', '', 'b', 'abc']],
  ['[a-c]+x?', ['a', 'cab', 'abx', 'x', 'abxx', 'd']],
  ['[^a-c]{2}', ['dd', 'zz', 'ad', 'd', 'ddd', '\n\n', 'é!']],
  ['\\d{3}-\\d{2,4}', ['123-45', '123-4567', '123-4', '12-345', '123-45678', 'abc-12']],
  ['\\w+@\\w+\\.com', ['ab_1@x.com', '@x.com', 'a@b.co', 'a@b.com']],
  ['(ab)*c', ['c', 'abc', 'ababc', 'abac', 'ab']],
  ['(?:x|y){1,3}z', ['xz', 'xyxz', 'xyxyz', 'z']],
  ['(?<word>[A-Z][a-z]*) k?', ['Hello k', 'Hello ', 'hello k']],
  ['[a-z ]{0,40}!', ['!', 'a b c!', `${'x'.repeat(40)}!`, `${'x'.repeat(41)}!`, 'A!']],
  ['^yes$|^no$', ['yes', 'no', 'yesno', '']],
  ['a.c', ['abc', 'a-c', 'a\nc', 'a\rc', 'aéc', 'a😀c', 'ac', 'a\u2028c', 'a\u2027c', 'a\u202ac', 'a\u{10ffff}c']],
  ['\\s\\S', [' x', '\tx', '  ', 'xx', '\u00a0x', ' \u00a0', ' \u3000', ' \u3001', ' \u0080', ' \u07ff', ' \u0800', ' \uffff', ' \u{10000}']],
  ['[^é]', ['e', 'é', 'è', 'ê', '\u0080', '😀']],
  ['[\\u0100-\\u2fff\\u{1F600}-\\u{1F64F}]+', ['Ā', '\u2fff', '\u3000', 'ÿ', '😀🙏', '🙐']],
  ['[\\d\\-.]+', ['1-2.3', '--', '', 'a']],
  ['\\x41\\u00e9\\u{1F600}', ['Aé😀', 'Ae😀', 'Aé']],
  ['caf[eé]', ['cafe', 'café', 'cafè']],
  ['[^"\\\\]*', ['a"b', 'ab', 'a\\b', '']],
  ['\\.\\*\\+\\?\\(\\)\\[\\]\\{\\}\\|\\^\\$\\/', ['.*+?()[]{}|^$/', '.']],
  ['a{2}b{1,}c{0,2}', ['aab', 'aabbbcc', 'ab', 'aabccc']],
  ['[a-]|[\\]b-]', ['a', '-', ']', 'b', 'c']],
];

describe('guided_regex grammar', () => {
  it.each(CASES)('accepts exactly the full matches of /%s/', async (pattern, samples) => {
    const factory = await compile({ kind: 'regex', pattern });
    const regex = new RegExp(`^(?:${pattern})$`, 'u');
    for (const sample of samples) {
      expect(accepts(factory, sample), `${JSON.stringify(sample)} against /${pattern}/`).toBe(regex.test(sample));
    }
  });

  it("reads Python's (?P<name>...) groups", async () => {
    const factory = await compile({ kind: 'regex', pattern: '(?P<year>\\d{4})-(?P<month>\\d{2})' });
    expect(accepts(factory, '2024-06')).toBe(true);
    expect(accepts(factory, '2024-6')).toBe(false);
  });

  it('never lets byte tokens spell malformed UTF-8, even where any character is allowed', async () => {
    const factory = await compile({ kind: 'regex', pattern: '.' });
    expect(acceptsBytes(factory, [0xc3, 0xa9])).toBe(true); // é
    expect(acceptsBytes(factory, [0xf0, 0x9f, 0x98, 0x80])).toBe(true); // 😀
    expect(acceptsBytes(factory, [0xc0, 0x80])).toBe(false); // overlong NUL
    expect(acceptsBytes(factory, [0xe0, 0x80, 0x80])).toBe(false); // overlong 3-byte form
    expect(acceptsBytes(factory, [0xed, 0xa0, 0x80])).toBe(false); // surrogate U+D800
    expect(acceptsBytes(factory, [0xf4, 0x90, 0x80, 0x80])).toBe(false); // above U+10FFFF
    expect(acceptsBytes(factory, [0x80])).toBe(false); // stray continuation byte
    expect(acceptsBytes(factory, [0xc3])).toBe(false); // unfinished character
  });

  it.each([
    ['(a)\\1', 'backreferences'],
    ['a(?=b)', 'lookahead'],
    ['(?<=a)b', 'lookbehind'],
    ['\\bword', 'word boundary'],
    ['a^b', "'^'"],
    ['a$b', "'$'"],
    ['\\p{L}+', 'Unicode property'],
    ['(?i)abc', 'invalid regular expression'],
    ['[]', 'matches no character'],
    ['[^\\s\\S]', 'matches no character'],
    ['a{2,1}', 'out of order'],
    ['(abc', 'invalid regular expression'],
  ])('refuses /%s/ naming the problem (%s)', async (pattern, named) => {
    const error = await compile({ kind: 'regex', pattern }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as ProtocolError).kind).toBe('invalid_request');
    expect((error as ProtocolError).param).toBe('guided_regex');
    expect((error as ProtocolError).message).toContain(named);
  });
});

describe('guided_choice grammar', () => {
  it('accepts each choice exactly, whatever characters it contains', async () => {
    const choices = ['yes', 'a "quoted" \\ choice', 'tab\there', 'naïve 😀', ''];
    const factory = await compile({ kind: 'choice', choices });
    for (const choice of choices) expect(accepts(factory, choice), JSON.stringify(choice)).toBe(true);
    for (const other of ['ye', 'yess', 'no', 'naive 😀', ' yes']) expect(accepts(factory, other), JSON.stringify(other)).toBe(false);
  });

  it('refuses an empty list', async () => {
    await expect(compile({ kind: 'choice', choices: [] })).rejects.toThrow(/non-empty list/);
  });
});
});
