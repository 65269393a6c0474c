/**
 * The text of single tokens, as vLLM's detokenizer names them in logprobs responses
 * (`decoded_token`): a chosen token's text is what it added to the output in context (so
 * "▁the" after a word is " the", and a byte token that leaves a character unfinished is
 * "" with the character going to the token that completes it); an alternative's text is
 * what it would have added at that point.
 */
import { IncrementalDetokenizer } from '../tokenizer/detokenizer.js';
import type { Tokenizer } from '../tokenizer/types.js';

/** Tokens of context decoded with an alternative: enough for sentencepiece's leading-space rule. */
const CONTEXT_TOKENS = 5;
const REPLACEMENT_CHARACTER = '\uFFFD';

export class TokenTexts {
  private readonly detokenizer: IncrementalDetokenizer;
  private readonly recent: number[];
  /** decode(recent), computed once per position when an alternative asks. */
  private recentText: string | null = null;

  /** `context`: the tokens the sequence continues (its prompt, or nothing for the prompt itself). */
  constructor(
    private readonly tokenizer: Pick<Tokenizer, 'decode'>,
    context: readonly number[],
    private readonly skipSpecialTokens: boolean,
  ) {
    this.detokenizer = new IncrementalDetokenizer(tokenizer, { skipSpecialTokens, promptTokenIds: context });
    this.recent = context.slice(-CONTEXT_TOKENS);
  }

  /** What `tokenId` would add after the tokens pushed so far; "" while it would end mid-character. */
  alternative(tokenId: number): string {
    const options = { skipSpecialTokens: this.skipSpecialTokens };
    this.recentText ??= this.tokenizer.decode(this.recent, options);
    const extended = this.tokenizer.decode([...this.recent, tokenId], options);
    if (extended.endsWith(REPLACEMENT_CHARACTER) || extended.length <= this.recentText.length) return '';
    return extended.slice(this.recentText.length);
  }

  /** Appends the chosen token and returns the text it released. */
  push(tokenId: number): string {
    this.recent.push(tokenId);
    if (this.recent.length > CONTEXT_TOKENS) this.recent.shift();
    this.recentText = null;
    return this.detokenizer.push(tokenId);
  }
}
