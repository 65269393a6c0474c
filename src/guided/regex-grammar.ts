import { charSetOptions, jsonStringCharSetOptions } from './char-set-ebnf.js';
import { literal, seq, type EbnfGrammar } from './ebnf.js';
import { GuidedDecodingError } from './errors.js';
import { RegexSupportError, type RegexNode } from './regex-parser.js';

/**
 * How matched text is written: 'raw' as itself (guided_regex output), 'json-string' as the
 * inside of a JSON string literal (a "pattern" schema), where quotes, backslashes and
 * control characters appear as escape sequences.
 */
export type RegexTextMode = 'raw' | 'json-string';

/** Rules one pattern may create; past this the grammar would take too long to compile. */
export const MAX_REGEX_RULES = 20_000;

/**
 * An expression matching the strings the regex matches in full, followed by `end`.
 *
 * The conversion passes the continuation down (each piece is converted with what follows
 * it), so repetitions and alternatives become right-recursive rules that end in their
 * continuation: the shape XGrammar masks fast (see EbnfGrammar.loop).
 */
export function regexToEbnf(node: RegexNode, mode: RegexTextMode, g: EbnfGrammar, end: string, hint = 'regex'): string {
  const options = (set: Extract<RegexNode, { type: 'set' }>['set']): string[] => {
    if (set.isEmpty) throw new RegexSupportError('a character class that matches no character (such as []) is not supported');
    return mode === 'raw' ? charSetOptions(set) : jsonStringCharSetOptions(set);
  };
  const text = (chars: string): string => literal(mode === 'raw' ? chars : JSON.stringify(chars).slice(1, -1));
  let rules = 0;
  const rule = (body: string): string => {
    if (++rules > MAX_REGEX_RULES) throw new GuidedDecodingError(`the pattern is too large to compile (over ${MAX_REGEX_RULES} grammar rules)`);
    return g.rule(hint, body);
  };

  const convert = (node: RegexNode, next: string): string => {
    switch (node.type) {
      case 'set': {
        if (node.set.single !== null) return seq(text(String.fromCodePoint(node.set.single)), next);
        const alternatives = options(node.set);
        if (alternatives.length === 1) return seq(alternatives[0], next);
        const after = g.named(hint, next);
        return rule(alternatives.map((o) => seq(o, after)).join(' | '));
      }
      case 'seq': {
        // Runs of single characters become one literal: shorter grammars, same language.
        let rest = next;
        let run = '';
        for (let i = node.items.length - 1; i >= 0; i--) {
          const item = node.items[i];
          if (item.type === 'set' && item.set.single !== null) {
            run = String.fromCodePoint(item.set.single) + run;
            continue;
          }
          if (run) rest = seq(text(run), rest);
          run = '';
          rest = convert(item, rest);
        }
        return run ? seq(text(run), rest) : rest;
      }
      case 'alt': {
        const after = g.named(hint, next);
        return rule(node.options.map((option) => convert(option, after)).join(' | '));
      }
      case 'repeat': {
        const after = g.named(hint, next);
        if (node.max === 0) return after;
        rules += node.max === Infinity ? node.min + 1 : node.max;
        if (rules > MAX_REGEX_RULES) throw new GuidedDecodingError(`the pattern is too large to compile (over ${MAX_REGEX_RULES} grammar rules)`);
        return g.loop(hint, (following) => convert(node.node, following), node.min, node.max, after);
      }
    }
  };
  return convert(node, end);
}
