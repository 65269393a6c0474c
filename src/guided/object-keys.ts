import { CharSet } from './char-set.js';
import { charSetOptions } from './char-set-ebnf.js';
import { alt, literal, seq, type EbnfGrammar } from './ebnf.js';
import { JSON_PLAIN_CHARS } from './json-grammar.js';

/**
 * A JSON string key that differs from every name in `names`: the key of an additional
 * property must not repeat a declared one, or JSON.parse would let the additional value
 * replace the declared value. Keys are written without escape sequences (so no escape can
 * spell a declared name in disguise), and a trie over the names steers away from each of
 * them. Returns an expression matching the whole key, quotes included.
 */
export function keyNotInEbnf(g: EbnfGrammar, names: readonly string[], hint: string): string {
  // The rest of a key without escapes, closing quote included (right-recursive: see EbnfGrammar.loop).
  const rest = g.shared('json_plain_string_rest', () =>
    [`"\\""`, ...charSetOptions(JSON_PLAIN_CHARS).map((o) => `${o} json_plain_string_rest`)].join(' | '),
  );

  interface TrieNode {
    end: boolean;
    children: Map<string, TrieNode>;
  }
  const root: TrieNode = { end: false, children: new Map() };
  // A name with characters that must be escaped can never equal an unescaped key.
  for (const name of names.filter((n) => ![...n].some((c) => !JSON_PLAIN_CHARS.has(c.codePointAt(0)!)))) {
    let node = root;
    for (const char of name) {
      let next = node.children.get(char);
      if (!next) {
        next = { end: false, children: new Map() };
        node.children.set(char, next);
      }
      node = next;
    }
    node.end = true;
  }

  const build = (node: TrieNode): string => {
    const options: string[] = [];
    if (!node.end) options.push('"\\""');
    for (const [char, child] of node.children) options.push(seq(literal(char), build(child)));
    const others = JSON_PLAIN_CHARS.subtract(CharSet.fromString([...node.children.keys()].join('')));
    if (!others.isEmpty) {
      for (const option of charSetOptions(others)) options.push(seq(option, rest));
    }
    return node.children.size === 0 && !node.end ? rest : g.rule(`${hint}_key`, alt(options));
  };
  return seq('"\\""', build(root));
}
