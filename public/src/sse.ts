/**
 * Incremental Server-Sent Events parsing: text arrives in arbitrary pieces (a network
 * read can end mid-line), events end at a blank line, and only `data:` fields matter
 * here. Multi-line data is joined with newlines, as the SSE spec says.
 */
export class SseParser {
  private buffer = '';
  private data: string[] = [];

  /** Feeds text; returns the data of every event completed by it. */
  push(text: string): string[] {
    this.buffer += text;
    const events: string[] = [];
    let newline: number;
    while ((newline = this.buffer.search(/\r\n|\r|\n/)) >= 0) {
      const line = this.buffer.slice(0, newline);
      const width = this.buffer.startsWith('\r\n', newline) ? 2 : 1;
      // A lone \r at the very end may be the first half of \r\n: wait for more text.
      if (this.buffer[newline] === '\r' && width === 1 && newline === this.buffer.length - 1) break;
      this.buffer = this.buffer.slice(newline + width);
      this.line(line, events);
    }
    return events;
  }

  /** The stream ended: an event not closed by a blank line still counts. */
  end(): string[] {
    const events: string[] = [];
    if (this.buffer !== '') this.line(this.buffer.replace(/\r$/, ''), events);
    this.buffer = '';
    if (this.data.length > 0) events.push(this.data.join('\n'));
    this.data = [];
    return events;
  }

  private line(line: string, events: string[]): void {
    if (line === '') {
      if (this.data.length > 0) events.push(this.data.join('\n'));
      this.data = [];
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') this.data.push(value);
  }
}
