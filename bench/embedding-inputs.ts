/** The embedding benches' inputs (Node and page halves): requests of 1, 8 and 64 texts, the same sentences on every side. */
export const EMBEDDING_REQUEST_SIZES = [1, 8, 64];

const SENTENCES = [
  'The quick brown fox jumps over the lazy dog.',
  'Retrieval finds the passages that answer a question.',
  'Embeddings map sentences to vectors; similar sentences lie close together.',
  'Edge servers run small models close to their users.',
  'What is the capital of France? Paris is the capital of France.',
  'Tom had a big dog and the dog liked to run in the park.',
  'Lily saw a cat on the roof, and the cat was happy.',
  'A journey of a thousand miles begins with a single step.',
];

/** `count` texts, the sentences repeated in turn. */
export const textsOf = (count: number): string[] => Array.from({ length: count }, (_, i) => SENTENCES[i % SENTENCES.length]!);
