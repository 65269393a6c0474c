import { describe, expect, it } from 'vitest';
import { sseDataPayloads } from '../../src/engine/remote/sse.js';

/** A body that delivers `bytes` in reads of the given sizes. */
function body(bytes: Uint8Array, cuts: number[]): ReadableStream<Uint8Array> {
  const pieces: Uint8Array[] = [];
  let start = 0;
  for (const cut of [...cuts, bytes.length]) {
    pieces.push(bytes.slice(start, cut));
    start = cut;
  }
  return new ReadableStream({
    pull(controller) {
      const next = pieces.shift();
      if (next === undefined) controller.close();
      else controller.enqueue(next);
    },
  });
}

async function payloads(text: string, cuts: number[] = []): Promise<string[]> {
  const out: string[] = [];
  for await (const data of sseDataPayloads(body(new TextEncoder().encode(text), cuts))) out.push(data);
  return out;
}

describe('SSE data payloads', () => {
  const stream = 'data: {"a":1}\n\n: keep-alive comment\n\nevent: message\ndata: {"b":"é"}\n\ndata: [DONE]\n\n';
  const expected = ['{"a":1}', '{"b":"é"}', '[DONE]'];

  it('reads events whole, skipping comments and other fields', async () => {
    expect(await payloads(stream)).toEqual(expected);
  });

  it('gives the same events however the bytes are split across reads, even inside a UTF-8 character', async () => {
    const bytes = new TextEncoder().encode(stream).length;
    for (let cut = 1; cut < bytes; cut++) expect(await payloads(stream, [cut])).toEqual(expected);
    expect(await payloads(stream, Array.from({ length: bytes - 1 }, (_, i) => i + 1))).toEqual(expected);
  });

  it('accepts CRLF and CR line ends, also when CRLF is split between reads', async () => {
    const crlf = 'data: x\r\n\r\ndata: y\r\r';
    expect(await payloads(crlf)).toEqual(['x', 'y']);
    expect(await payloads(crlf, [8])).toEqual(['x', 'y']);
  });

  it('joins multi-line data with newlines and keeps the text after "data:" without one leading space', async () => {
    expect(await payloads('data: line one\ndata:line two\ndata:  indented\n\n')).toEqual(['line one\nline two\n indented']);
  });

  it('keeps a last event the body ends without a blank line', async () => {
    expect(await payloads('data: a\n\ndata: b')).toEqual(['a', 'b']);
    expect(await payloads('data: a\n\ndata: b\n')).toEqual(['a', 'b']);
  });
});
