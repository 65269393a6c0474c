import { toolCallId } from './call-ids.js';
import type { ToolCall, ToolCallDelta, ToolCallParser, ToolCallReading } from './types.js';

/** What one step adds to a streamed message. */
export interface MessageDelta {
  content?: string;
  toolCalls?: ToolCallDelta[];
}

/** Reads the output so far (or the whole output, `final`) into content and calls. */
export type OutputReader = (text: string, final: boolean) => ToolCallReading;

export function parserReader(parser: ToolCallParser): OutputReader {
  return (text, final) => parser.read(text, final);
}

/**
 * Turns the growing output of one choice into OpenAI's streamed deltas: new content,
 * a call's first entry (index, id, type, name) as soon as its name is known, then its
 * argument fragments. Every step re-reads the whole output (outputs are short, and the
 * readers stay simple and stateless); what was sent is remembered, so each delta holds
 * only what is new.
 */
export class ToolCallStream {
  private text = '';
  private sentContent = 0;
  private readonly sentCalls: Array<{ id: string; arguments: number }> = [];

  constructor(
    private readonly reader: OutputReader,
    private readonly newId: () => string = toolCallId,
  ) {}

  /**
   * Adds the step's text; returns what to send (empty when nothing is new). With
   * `final` (the choice's last step) it is everything not sent yet.
   */
  push(text: string, final = false): MessageDelta {
    this.text += text;
    return this.diff(this.reader(this.text, final));
  }

  /** Whether any call was sent: the choice then finishes with "tool_calls". */
  get calledTools(): boolean {
    return this.sentCalls.length > 0;
  }

  private diff(reading: ToolCallReading): MessageDelta {
    const delta: MessageDelta = {};
    if (reading.content.length > this.sentContent) {
      delta.content = reading.content.slice(this.sentContent);
      this.sentContent = reading.content.length;
    }
    const calls: ToolCallDelta[] = [];
    reading.calls.forEach((call, index) => {
      const sent = this.sentCalls[index];
      if (sent === undefined) {
        const id = call.id ?? this.newId();
        this.sentCalls.push({ id, arguments: call.arguments.length });
        calls.push({ index, id, type: 'function', function: { name: call.name, arguments: call.arguments } });
      } else if (call.arguments.length > sent.arguments) {
        calls.push({ index, function: { arguments: call.arguments.slice(sent.arguments) } });
        sent.arguments = call.arguments.length;
      }
    });
    if (calls.length > 0) delta.toolCalls = calls;
    return delta;
  }
}

/** A whole output's message: its content (null when empty beside calls) and calls. */
export function readMessage(reader: OutputReader, text: string, newId: () => string = toolCallId): { content: string | null; toolCalls: ToolCall[] } {
  const reading = reader(text, true);
  const toolCalls = reading.calls.map((call): ToolCall => ({ id: call.id ?? newId(), type: 'function', function: { name: call.name, arguments: call.arguments } }));
  return { content: reading.content === '' && toolCalls.length > 0 ? null : reading.content, toolCalls };
}
