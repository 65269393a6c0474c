import { describe, expect, it } from 'vitest';
import { SseParser } from '../../public/src/sse.js';

const STREAM = 'data: {"a":1}\n\n: a comment\n\ndata: line one\ndata: line two\n\nevent: x\ndata:no-space\n\ndata: [DONE]\n\n';
const EVENTS = ['{"a":1}', 'line one\nline two', 'no-space', '[DONE]'];

function parseInPieces(text: string, cuts: number[]): string[] {
  const parser = new SseParser();
  const events: string[] = [];
  let start = 0;
  for (const cut of [...cuts, text.length]) {
    events.push(...parser.push(text.slice(start, cut)));
    start = cut;
  }
  return [...events, ...parser.end()];
}

describe('SseParser', () => {
  it('reads every data payload of a stream', () => {
    expect(parseInPieces(STREAM, [])).toEqual(EVENTS);
  });

  it('gives the same events however the network splits the text', () => {
    for (let cut = 1; cut < STREAM.length; cut++) expect(parseInPieces(STREAM, [cut])).toEqual(EVENTS);
    expect(parseInPieces(STREAM, Array.from({ length: STREAM.length - 1 }, (_, i) => i + 1))).toEqual(EVENTS);
  });

  it('accepts CRLF and CR line endings, even split between pieces', () => {
    const crlf = STREAM.replace(/\n/g, '\r\n');
    for (let cut = 1; cut < crlf.length; cut++) expect(parseInPieces(crlf, [cut])).toEqual(EVENTS);
    expect(parseInPieces(STREAM.replace(/\n/g, '\r'), [])).toEqual(EVENTS);
  });

  it('emits an event only once its blank line arrives, and a trailing one at the end of the stream', () => {
    const parser = new SseParser();
    expect(parser.push('data: {"text":["a"]}\n')).toEqual([]);
    expect(parser.push('\n')).toEqual(['{"text":["a"]}']);
    expect(parser.push('data: last')).toEqual([]);
    expect(parser.end()).toEqual(['last']);
  });
});
