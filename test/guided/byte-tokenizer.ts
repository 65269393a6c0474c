import { compileGuide } from '../../src/guided/compile-guide.js';
import type { GuideFactory } from '../../src/guided/guide.js';
import type { GuidedDecodingRequest } from '../../src/guided/request.js';
import type { Tokenizer } from '../../src/tokenizer/types.js';
import { GuideThreadPool } from '../../src/guided/guide-thread.js';
import { tokenVocabulary } from '../../src/guided/token-vocabulary.js';

/**
 * A tokenizer whose tokens are single bytes (sentencepiece byte-fallback style <0xNN>),
 * plus <unk>, <s>, </s>. Feeding a text byte by byte through a guide shows exactly which
 * strings a grammar accepts, independently of any model.
 */
export const EOS = 2;
const FIRST_BYTE = 3;

export function byteTokenizer(): Tokenizer {
  const tokens = ['<unk>', '<s>', '</s>', ...Array.from({ length: 256 }, (_, b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`)];
  const ids = new Map(tokens.map((t, i) => [t, i]));
  return {
    vocabSize: tokens.length,
    bosTokenId: 1,
    eosTokenIds: [EOS],
    specialTokenIds: new Set([0, 1, 2]),
    encode: (text) => [...new TextEncoder().encode(text)].map((b) => b + FIRST_BYTE),
    decode: (list) => new TextDecoder().decode(Uint8Array.from(list.filter((id) => id >= FIRST_BYTE).map((id) => id - FIRST_BYTE))),
    idToToken: (id) => tokens[id],
    tokenToId: (token) => ids.get(token),
  };
}

export const tokenizer = byteTokenizer();

/** Whether the grammar accepts exactly these bytes as a complete output. */
export function acceptsBytes(factory: GuideFactory, bytes: Iterable<number>): boolean {
  const guide = factory.createGuide();
  try {
    for (const b of bytes) {
      if (!guide.isAllowed(b + FIRST_BYTE)) return false;
      guide.accept(b + FIRST_BYTE);
    }
    return guide.isAllowed(EOS);
  } finally {
    guide.dispose();
  }
}

export function accepts(factory: GuideFactory, text: string): boolean {
  return acceptsBytes(factory, new TextEncoder().encode(text));
}

/**
 * Where the grammars are compiled and matched: XGrammar on this thread (workerd, the page)
 * or on Node's guide threads (guided/guide-thread.ts). Suites run in both (useGuideHome).
 */
export const GUIDE_HOMES = ['on this thread', 'on the guide threads'] as const;
export type GuideHome = (typeof GUIDE_HOMES)[number];
let home: GuideHome = GUIDE_HOMES[0];
let pool: GuideThreadPool | null = null;

export function useGuideHome(next: GuideHome): void {
  home = next;
}

export function compile(request: GuidedDecodingRequest): Promise<GuideFactory> {
  if (home === GUIDE_HOMES[0]) return compileGuide(request, tokenizer);
  pool ??= new GuideThreadPool(tokenVocabulary(tokenizer), 2, 128);
  return compileGuide(request, tokenizer, { thread: pool });
}

export function compileSchema(schema: object): Promise<GuideFactory> {
  return compile({ kind: 'json', schema });
}
