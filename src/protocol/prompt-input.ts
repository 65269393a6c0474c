/**
 * The one input shape OpenAI's completions and embeddings share: a string, a list of strings,
 * a list of token ids, or a list of lists of token ids (vLLM's prompt / input).
 */
import { checkedField } from './fields.js';

export type PromptInput = string | string[] | number[] | number[][];

function isTokenId(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

export interface PromptInputWords {
  /** What one item is called in messages: "prompt", "input". */
  item: string;
  /** The refusal of a list of objects (chat messages where text was expected), if it has its own words. */
  objects?: string;
}

export function promptInputField(words: PromptInputWords) {
  const shapes = 'must be a string, a list of strings, a list of token ids or a list of lists of token ids';
  return checkedField((input, report): PromptInput => {
    if (input === undefined) {
      report('is required');
      return '';
    }
    if (typeof input === 'string') return input;
    if (!Array.isArray(input)) {
      report(shapes);
      return '';
    }
    // vLLM: "please provide at least one prompt".
    if (input.length === 0) {
      report(`must contain at least one ${words.item}`);
      return '';
    }
    const first = input[0];
    if (typeof first === 'string') {
      const bad = input.findIndex((item) => typeof item !== 'string');
      if (bad !== -1) report(`must be a string, like the other ${words.item}s in the list`, { path: [bad], input: input[bad] });
      return input as string[];
    }
    if (typeof first === 'number' || typeof first === 'bigint') {
      const bad = input.findIndex((id) => !isTokenId(id));
      if (bad !== -1) report('must be a token id (an integer >= 0)', { path: [bad], input: input[bad] });
      return input as number[];
    }
    if (Array.isArray(first)) {
      for (const [i, ids] of input.entries()) {
        if (!Array.isArray(ids)) {
          report(`must be a list of token ids, like the other ${words.item}s in the list`, { path: [i], input: ids });
          return [];
        }
        if (ids.length === 0) {
          report('must not be an empty list of token ids', { path: [i], input: ids });
          return [];
        }
        const bad = ids.findIndex((id) => !isTokenId(id));
        if (bad !== -1) {
          report('must be a token id (an integer >= 0)', { path: [i, bad], input: ids[bad] });
          return [];
        }
      }
      return input as number[][];
    }
    if (words.objects !== undefined && first !== null && typeof first === 'object') {
      report(words.objects);
      return '';
    }
    report(shapes);
    return '';
  });
}
