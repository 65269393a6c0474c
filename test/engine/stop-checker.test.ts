import { describe, expect, it } from 'vitest';
import { StopStringChecker } from '../../src/engine/stop-checker.js';

/** Feeds `pieces` and returns what a streaming client would have seen. */
function stream(checker: StopStringChecker, pieces: string[]) {
  const emitted: string[] = [];
  let matched: string | null = null;
  for (const piece of pieces) {
    const result = checker.push(piece);
    emitted.push(result.emit);
    if (result.matched !== null) {
      matched = result.matched;
      break;
    }
  }
  if (matched === null) emitted.push(checker.flush());
  return { emitted, text: emitted.join(''), matched };
}

describe('StopStringChecker', () => {
  it('is a pass-through without stop strings', () => {
    const checker = new StopStringChecker([], false);
    expect(checker.push('Hello, ')).toEqual({ emit: 'Hello, ', matched: null });
    expect(checker.push('world')).toEqual({ emit: 'world', matched: null });
    expect(checker.flush()).toBe('');
  });

  it('stops within a single push and drops the stop string and what follows', () => {
    const checker = new StopStringChecker(['\n\n'], false);
    expect(checker.push('Answer: 42\n\nQuestion')).toEqual({ emit: 'Answer: 42', matched: '\n\n' });
  });

  it('keeps the stop string when includeStopStrInOutput is set (but not what follows)', () => {
    const checker = new StopStringChecker(['END'], true);
    expect(checker.push('abcENDxyz')).toEqual({ emit: 'abcEND', matched: 'END' });
  });

  it('matches a stop string spanning two pushes without ever showing part of it', () => {
    const result = stream(new StopStringChecker(['</s>'], false), ['Hi there</', 's> more']);
    expect(result.emitted).toEqual(['Hi there', '']);
    expect(result.matched).toBe('</s>');
  });

  it('matches a stop string spanning three pushes, included in the output', () => {
    const result = stream(new StopStringChecker(['STOP'], true), ['go S', 'T', 'OP!']);
    expect(result.emitted).toEqual(['go ', '', 'STOP']);
    expect(result.matched).toBe('STOP');
  });

  it('releases held text once it can no longer become a stop string', () => {
    const checker = new StopStringChecker(['</s>'], false);
    expect(checker.push('a</')).toEqual({ emit: 'a', matched: null });
    expect(checker.push('b>')).toEqual({ emit: '</b>', matched: null });
  });

  it('holds back nothing when the tail cannot start a stop string', () => {
    const checker = new StopStringChecker(['User:', '###'], false);
    expect(checker.push('Some text. Use')).toEqual({ emit: 'Some text. ', matched: null });
    expect(checker.push('ful #')).toEqual({ emit: 'Useful ', matched: null });
    expect(checker.push('1 item')).toEqual({ emit: '#1 item', matched: null });
  });

  it('holds back only the longest tail that is a prefix of some stop string', () => {
    // "aab": the suffix "ab" starts "abc"; the leading "a" cannot be part of it.
    const checker = new StopStringChecker(['abc'], false);
    expect(checker.push('aab')).toEqual({ emit: 'a', matched: null });
    expect(checker.push('c')).toEqual({ emit: '', matched: 'abc' });
  });

  it('with several stop strings, the one completing first wins', () => {
    const checker = new StopStringChecker(['world', 'lo'], false);
    expect(checker.push('hello world')).toEqual({ emit: 'hel', matched: 'lo' });
    const later = new StopStringChecker(['zzz', 'b'], true);
    expect(later.push('abczzz')).toEqual({ emit: 'ab', matched: 'b' });
  });

  it('when one stop string is a prefix of another, the shorter completes first', () => {
    const checker = new StopStringChecker(['abc', 'ab'], false);
    expect(checker.push('xabcd')).toEqual({ emit: 'x', matched: 'ab' });
  });

  it('among stops completing at the same character, the longest (earliest start) wins', () => {
    const checker = new StopStringChecker(['c', 'abc'], false);
    expect(checker.push('xxabc')).toEqual({ emit: 'xx', matched: 'abc' });
  });

  it('gives the same result however the text is split into pushes', () => {
    const stops = ['xabcd', 'bc', 'dd'];
    const text = 'hello xabcd dd';
    const whole = stream(new StopStringChecker(stops, true), [text]);
    for (let cut1 = 1; cut1 < text.length; cut1++) {
      for (let cut2 = cut1; cut2 < text.length; cut2++) {
        const pieces = [text.slice(0, cut1), text.slice(cut1, cut2), text.slice(cut2)];
        const split = stream(new StopStringChecker(stops, true), pieces);
        expect({ text: split.text, matched: split.matched }).toEqual({ text: whole.text, matched: whole.matched });
      }
    }
    expect(whole).toMatchObject({ text: 'hello xabc', matched: 'bc' });
  });

  it('flush releases held text when generation ends for another reason', () => {
    const checker = new StopStringChecker(['</s>'], false);
    expect(checker.push('the end</')).toEqual({ emit: 'the end', matched: null });
    expect(checker.flush()).toBe('</');
    expect(checker.flush()).toBe('');
  });

  it('emits nothing after a match', () => {
    const checker = new StopStringChecker(['.'], false);
    expect(checker.push('One. Two')).toEqual({ emit: 'One', matched: '.' });
    expect(checker.push('more text')).toEqual({ emit: '', matched: null });
    expect(checker.flush()).toBe('');
  });

  it('ignores empty stop strings', () => {
    const checker = new StopStringChecker(['', 'X'], false);
    expect(checker.push('abc')).toEqual({ emit: 'abc', matched: null });
    expect(checker.push('dXe')).toEqual({ emit: 'd', matched: 'X' });
  });

  it('works with non-ASCII stop strings split across pushes', () => {
    const result = stream(new StopStringChecker(['。\n'], false), ['你好', '。', '\n再见']);
    expect(result).toMatchObject({ text: '你好', matched: '。\n' });
  });
});
