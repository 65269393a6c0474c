import type { GenerationDelta } from '../engine/types.js';
import { streamingErrorPayload } from './errors.js';
import { collectOutput } from './generation.js';

/** MindIE's /generate response: one entry per returned sequence. */
export interface GenerateResponse {
  text: string[];
}

/** Non-streaming: the prompt followed by the generated text, as in MindIE's (and vLLM's legacy) example. */
export async function generateNonStreaming(run: AsyncIterable<GenerationDelta>, promptText: string): Promise<GenerateResponse> {
  const output = await collectOutput(run);
  return { text: [promptText + output.text] };
}

/**
 * Streaming: one event per engine step that released text, carrying that step's new
 * text, or with `fullText` everything generated so far (without the prompt, as in
 * MindIE's fullTextEnabled example). Steps whose text is held back (partial UTF-8, a
 * possible stop string) send nothing: the event would carry no information.
 *
 * The stream ends by closing the body, like vLLM's legacy server: the MindIE format has
 * no end marker. An engine failure mid-stream sends one error event before closing.
 */
export async function* generateStream(run: AsyncIterable<GenerationDelta>, options: { fullText: boolean }): AsyncGenerator<string> {
  let generated = '';
  try {
    for await (const delta of run) {
      if (delta.text === '') continue;
      generated += delta.text;
      const response: GenerateResponse = { text: [options.fullText ? generated : delta.text] };
      yield JSON.stringify(response);
    }
  } catch (error) {
    yield streamingErrorPayload(error);
  }
}
