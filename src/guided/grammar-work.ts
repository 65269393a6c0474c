/**
 * An estimate of XGrammar's compile work for a grammar on a vocabulary, in token visits.
 *
 * XGrammar precomputes, for every position of the grammar where a character class or a
 * literal can start, which tokens it accepts. A token whose first character a position
 * rejects costs one comparison; one it accepts is followed into the rest of the grammar.
 * So the work is set by the classes that accept most tokens' first characters (a `[\s\S]`
 * or a `\w` repeated 200 times), not by the grammar's length: measured on Llama 2's 32 000
 * tokens, a 39 K-character grammar of 200 string properties compiles in 0.16 s, an 18 K one
 * of `[\s\S]{200}` in 3.7 s, an 8.5 K one of `(\w+ ){1,50}\w+` in 1.8 s (NOTES.md, session 4).
 *
 * A class counts as the share of the vocabulary's tokens whose first byte it accepts; every
 * 2048 grammar characters add one more position for the rest. Times the vocabulary size,
 * one unit took 0.2–0.9 µs here.
 */
export function estimateGrammarWork(ebnf: string, vocabulary: GrammarVocabulary): number {
  let positions = ebnf.length / 2048;
  // A grammar repeats few distinct classes many times (a bounded repetition, a digit per position).
  const weights = new Map<string, number>();
  for (let i = 0; i < ebnf.length; i++) {
    const c = ebnf[i];
    if (c === '"') {
      i = endOfLiteral(ebnf, i);
    } else if (c === '[') {
      const end = endOfClass(ebnf, i);
      const body = ebnf.slice(i + 1, end);
      let weight = weights.get(body);
      if (weight === undefined) weights.set(body, (weight = classWeight(body, vocabulary.firstByteShare)));
      positions += weight;
      i = end;
    }
  }
  return Math.ceil(positions * Math.max(1, vocabulary.size));
}

/** What the estimate needs of a vocabulary: its size and how its tokens' first bytes are spread. */
export interface GrammarVocabulary {
  readonly size: number;
  /** By byte value: the share of tokens whose output starts with that byte (sums to at most 1). */
  readonly firstByteShare: Float64Array;
}

/** The spread of first bytes over a vocabulary's tokens (tokens with no text are left out). */
export function grammarVocabulary(size: number, tokenBytes: readonly Uint8Array[]): GrammarVocabulary {
  const firstByteShare = new Float64Array(256);
  let counted = 0;
  for (const bytes of tokenBytes) {
    if (bytes.length === 0) continue;
    firstByteShare[bytes[0]]++;
    counted++;
  }
  for (let b = 0; b < 256; b++) firstByteShare[b] /= Math.max(1, counted);
  return { size, firstByteShare };
}

/**
 * A vocabulary of `size` tokens of which nothing else is known: first bytes spread over
 * printable ASCII, a tenth of them non-ASCII.
 */
export function uniformGrammarVocabulary(size: number): GrammarVocabulary {
  const firstByteShare = new Float64Array(256);
  for (let b = PRINTABLE_LO; b <= PRINTABLE_HI; b++) firstByteShare[b] = 0.9 / PRINTABLE;
  for (let b = 0x80; b < 0x100; b++) firstByteShare[b] = 0.1 / 128;
  return { size, firstByteShare };
}

const PRINTABLE_LO = 0x20;
const PRINTABLE_HI = 0x7e;
const PRINTABLE = PRINTABLE_HI - PRINTABLE_LO + 1;
/** Even a class no token starts with is a position XGrammar visits. */
const MIN_CLASS_WEIGHT = 0.001;

function endOfLiteral(ebnf: string, start: number): number {
  for (let i = start + 1; i < ebnf.length; i++) {
    if (ebnf[i] === '\\') i++;
    else if (ebnf[i] === '"') return i;
  }
  return ebnf.length;
}

function endOfClass(ebnf: string, start: number): number {
  for (let i = start + 1; i < ebnf.length; i++) {
    if (ebnf[i] === '\\') i++;
    else if (ebnf[i] === ']') return i;
  }
  return ebnf.length;
}

/** The code points of a class body: `a`, `\uXXXX`, `\n`-style escapes, and ranges of them. */
function classRanges(body: string): Array<[number, number]> {
  const points: number[] = [];
  const dashes: boolean[] = [];
  for (let i = 0; i < body.length; i++) {
    if (body[i] === '-' && points.length > 0 && i + 1 < body.length && !dashes[points.length - 1]) {
      dashes[points.length - 1] = true;
      continue;
    }
    if (body[i] === '\\' && body[i + 1] === 'u') {
      points.push(parseInt(body.slice(i + 2, i + 6), 16));
      i += 5;
    } else if (body[i] === '\\') {
      const escaped = body[++i] ?? '\\';
      points.push(({ n: 10, r: 13, t: 9 } as Record<string, number>)[escaped] ?? escaped.codePointAt(0)!);
    } else {
      points.push(body.codePointAt(i)!);
      if (points[points.length - 1] > 0xffff) i++;
    }
    dashes.push(false);
  }
  const ranges: Array<[number, number]> = [];
  for (let k = 0; k < points.length; k++) {
    if (dashes[k] && k + 1 < points.length) {
      ranges.push([points[k], points[k + 1]]);
      k++;
    } else {
      ranges.push([points[k], points[k]]);
    }
  }
  return ranges;
}

function classWeight(rawBody: string, firstByteShare: Float64Array): number {
  const negated = rawBody.startsWith('^');
  // XGrammar reads class members above U+007F as single bytes (char-set-ebnf.ts).
  const accepted = new Uint8Array(256);
  for (const [lo, hi] of classRanges(negated ? rawBody.slice(1) : rawBody)) {
    for (let b = Math.max(0, lo); b <= Math.min(0xff, hi); b++) accepted[b] = 1;
  }
  let share = 0;
  for (let b = 0; b < 256; b++) {
    // A negated class accepts every byte above 0x7F, whatever it lists.
    const accepts = negated ? b >= 0x80 || accepted[b] === 0 : accepted[b] === 1;
    if (accepts) share += firstByteShare[b];
  }
  return Math.max(MIN_CLASS_WEIGHT, share);
}
