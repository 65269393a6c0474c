import type { GenerationDelta } from '../../engine/types.js';
import { streamingErrorPayload } from '../errors.js';
import { collectOutputs } from '../generation.js';

/** MindIE's /generate response: one entry per returned sequence. */
export interface GenerateResponse {
  text: string[];
}

/** Non-streaming: per returned sequence, the prompt followed by its generated text, as in MindIE's (and vLLM's legacy) example. */
export async function generateNonStreaming(run: AsyncIterable<GenerationDelta>, promptText: string): Promise<GenerateResponse> {
  const outputs = await collectOutputs(run);
  return { text: outputs.map((output) => promptText + output.text) };
}

/**
 * Streaming: one event per engine step that released text, with one entry per returned
 * sequence: that step's new text ("" for a sequence with nothing new, or already
 * finished), or with `fullText` each sequence's text so far (without the prompt, as in
 * MindIE's fullTextEnabled example). Steps whose text is all held back (partial UTF-8, a
 * possible stop string) send nothing: the event would carry no information.
 *
 * A step is complete once every unfinished sequence has reported in it: the engine emits
 * one delta per running sequence per step.
 *
 * The stream ends by closing the body, like vLLM's legacy server: the MindIE format has
 * no end marker. An engine failure mid-stream sends one error event before closing.
 */
export async function* generateStream(
  run: AsyncIterable<GenerationDelta>,
  options: { fullText: boolean; n?: number },
): AsyncGenerator<string> {
  const n = options.n ?? 1;
  const generated = new Array<string>(n).fill('');
  const running = new Set(Array.from({ length: n }, (_, index) => index));
  const step = new Map<number, string>();
  const event = (): string | null => {
    const changed = [...step.values()].some((text) => text !== '');
    const texts = generated.map((text, index) => (options.fullText ? text : (step.get(index) ?? '')));
    step.clear();
    return changed ? JSON.stringify({ text: texts } satisfies GenerateResponse) : null;
  };
  try {
    for await (const delta of run) {
      if (step.has(delta.index)) {
        // A sequence reporting twice means the previous step is over.
        const pending = event();
        if (pending !== null) yield pending;
      }
      step.set(delta.index, (step.get(delta.index) ?? '') + delta.text);
      generated[delta.index] = (generated[delta.index] ?? '') + delta.text;
      if (delta.finishReason !== null) running.delete(delta.index);
      if ([...running].every((index) => step.has(index))) {
        const complete = event();
        if (complete !== null) yield complete;
      }
    }
    const rest = event();
    if (rest !== null) yield rest;
  } catch (error) {
    yield streamingErrorPayload(error);
  }
}
