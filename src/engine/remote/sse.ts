/**
 * The `data` payloads of a Server-Sent Events body, in arrival order, as soon as each
 * event is complete (a blank line ends it). Multi-line data is joined with "\n";
 * comments and the `event:`/`id:`/`retry:` fields are ignored: OpenAI-compatible servers
 * only send data.
 */
export async function* sseDataPayloads(body: ReadableStream<Uint8Array>): AsyncGenerator<string> {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  const parser = new SseLineParser();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      yield* parser.push(decoder.decode(value, { stream: true }));
    }
    yield* parser.end(decoder.decode());
  } finally {
    // Stopping early (consumer gone, upstream error) must release the connection.
    await reader.cancel().catch(() => {});
  }
}

class SseLineParser {
  private buffer = '';
  private data: string[] = [];

  /** The events completed by this text. */
  *push(text: string): Generator<string> {
    this.buffer += text;
    let lineEnd: number;
    while ((lineEnd = this.buffer.search(/[\r\n]/)) >= 0) {
      // A \r at the very end may be the first half of \r\n: wait for the next chunk.
      if (this.buffer[lineEnd] === '\r' && lineEnd === this.buffer.length - 1) return;
      const line = this.buffer.slice(0, lineEnd);
      this.buffer = this.buffer.slice(lineEnd + (this.buffer.startsWith('\r\n', lineEnd) ? 2 : 1));
      yield* this.line(line);
    }
  }

  /** The body ended: a last event without its closing blank line still counts. */
  *end(text: string): Generator<string> {
    yield* this.push(text);
    const rest = this.buffer.replace(/\r$/, '');
    this.buffer = '';
    if (rest !== '') yield* this.line(rest);
    yield* this.line('');
  }

  private *line(line: string): Generator<string> {
    if (line === '') {
      if (this.data.length > 0) yield this.data.join('\n');
      this.data = [];
    } else if (line.startsWith('data:')) {
      this.data.push(line.slice(line[5] === ' ' ? 6 : 5));
    }
  }
}
