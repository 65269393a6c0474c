/**
 * Pythonic tool calls (Llama 3.2 / 4, ToolACE and others): the whole output is a Python
 * list of calls with keyword arguments, [get_weather(city="Paris"), get_time()],
 * optionally between <|python_start|> and <|python_end|>. Arguments are Python literals
 * (strings, numbers, True/False/None, lists, tuples, dicts), returned as JSON. While it
 * streams, a call is announced by its name as soon as "name(" is read, and its
 * arguments follow once its ")" is: a partial Python literal has no stable JSON prefix.
 */
import { partialTagLength, type ToolCallParser, type ToolCallReading, type ToolCallSnapshot } from '../types.js';

const START = '<|python_start|>';
const END = '<|python_end|>';

/** The text ended inside the list. */
class Incomplete extends Error {}
/** Not a list of calls. */
class NotCalls extends Error {}

class PythonReader {
  at = 0;
  constructor(private readonly text: string) {}

  space(): void {
    while (this.at < this.text.length && /\s/.test(this.text[this.at]!)) this.at++;
  }

  peek(): string {
    this.space();
    if (this.at >= this.text.length) throw new Incomplete();
    return this.text[this.at]!;
  }

  expect(char: string): void {
    if (this.peek() !== char) throw new NotCalls(`expected ${char} at ${this.at}`);
    this.at++;
  }

  identifier(dotted = false): string {
    this.space();
    const pattern = dotted ? /^[A-Za-z_][\w.]*/ : /^[A-Za-z_]\w*/;
    const match = pattern.exec(this.text.slice(this.at));
    if (!match) {
      if (this.at >= this.text.length) throw new Incomplete();
      throw new NotCalls(`expected a name at ${this.at}`);
    }
    this.at += match[0].length;
    // A name at the very end may go on.
    if (this.at >= this.text.length) throw new Incomplete();
    return match[0];
  }

  value(): unknown {
    const char = this.peek();
    if (char === '"' || char === "'") return this.string(char);
    if (char === '[') return this.sequence('[', ']');
    if (char === '(') return this.sequence('(', ')');
    if (char === '{') return this.dict();
    const match = /^(?:-?(?:\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+)|True|False|None)/.exec(this.text.slice(this.at));
    if (!match) throw new NotCalls(`unexpected ${JSON.stringify(char)} at ${this.at}`);
    this.at += match[0].length;
    if (this.at >= this.text.length) throw new Incomplete();
    const word = match[0];
    if (word === 'True') return true;
    if (word === 'False') return false;
    if (word === 'None') return null;
    return Number(word);
  }

  private string(quote: string): string {
    const triple = this.text.startsWith(quote.repeat(3), this.at);
    const close = triple ? quote.repeat(3) : quote;
    this.at += close.length;
    let value = '';
    const escapes: Record<string, string> = { n: '\n', t: '\t', r: '\r', '\\': '\\', "'": "'", '"': '"', '0': '\0' };
    for (;;) {
      if (this.at >= this.text.length) throw new Incomplete();
      if (this.text.startsWith(close, this.at)) {
        this.at += close.length;
        return value;
      }
      const char = this.text[this.at]!;
      if (char === '\\') {
        const next = this.text[this.at + 1];
        if (next === undefined) throw new Incomplete();
        value += escapes[next] ?? `\\${next}`;
        this.at += 2;
      } else {
        if (char === '\n' && !triple) throw new NotCalls('newline in a string');
        value += char;
        this.at++;
      }
    }
  }

  private sequence(open: string, close: string): unknown[] {
    this.expect(open);
    const items: unknown[] = [];
    while (this.peek() !== close) {
      items.push(this.value());
      if (this.peek() === ',') this.at++;
      else if (this.peek() !== close) throw new NotCalls(`expected , or ${close} at ${this.at}`);
    }
    this.at++;
    return items;
  }

  private dict(): Record<string, unknown> {
    this.expect('{');
    const entries: Record<string, unknown> = {};
    while (this.peek() !== '}') {
      const key = this.value();
      this.expect(':');
      entries[String(key)] = this.value();
      if (this.peek() === ',') this.at++;
      else if (this.peek() !== '}') throw new NotCalls(`expected , or } at ${this.at}`);
    }
    this.at++;
    return entries;
  }
}

function readCalls(body: string, calls: ToolCallSnapshot[]): void {
  const reader = new PythonReader(body);
  reader.expect('[');
  while (reader.peek() !== ']') {
    const name = reader.identifier(true);
    reader.expect('(');
    const call = { name, arguments: '' };
    calls.push(call);
    const args: Record<string, unknown> = {};
    while (reader.peek() !== ')') {
      const key = reader.identifier();
      reader.expect('=');
      args[key] = reader.value();
      if (reader.peek() === ',') reader.at++;
      else if (reader.peek() !== ')') throw new NotCalls(`expected , or ) at ${reader.at}`);
    }
    reader.at++;
    call.arguments = JSON.stringify(args);
    if (reader.peek() === ',') reader.at++;
    else if (reader.peek() !== ']') throw new NotCalls(`expected , or ] at ${reader.at}`);
  }
  reader.at++;
  reader.space();
  if (reader.at < body.length) throw new NotCalls('text after the list of calls');
}

function read(text: string, final: boolean): ToolCallReading {
  let body = text.trimStart();
  if (body.startsWith(START)) body = body.slice(START.length);
  else if (!final && (body === '' || START.startsWith(body))) return { content: '', calls: [] };
  const trimmedEnd = body.trimEnd();
  if (trimmedEnd.endsWith(END)) body = trimmedEnd.slice(0, -END.length);
  else if (!final && partialTagLength(trimmedEnd, END) > 0 && trimmedEnd.includes(']')) {
    body = trimmedEnd.slice(0, trimmedEnd.length - partialTagLength(trimmedEnd, END));
  }
  const lead = body.trimStart();
  if (lead === '' && !final) return { content: '', calls: [] };
  if (!lead.startsWith('[')) return { content: text, calls: [] };
  const calls: ToolCallSnapshot[] = [];
  try {
    readCalls(body, calls);
  } catch (error) {
    if (error instanceof NotCalls) return final || calls.length === 0 ? { content: text, calls: [] } : { content: '', calls };
    if (!(error instanceof Incomplete)) throw error;
    // Cut off (max_tokens): the calls whose arguments were complete, as streamed.
    if (final) return { content: '', calls: calls.filter((call) => call.arguments !== '') };
  }
  return { content: '', calls };
}

export const pythonicParser: ToolCallParser = { name: 'pythonic', read, keepsSpecialTokens: true };
