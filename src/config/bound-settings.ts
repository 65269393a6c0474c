/**
 * Bounds on what one request may make the server do: every size a client controls that
 * turns into memory, CPU time or event-loop time. Each is a server setting (and an
 * environment variable named after it: maxPromptChars → MAX_PROMPT_CHARS); a request past
 * one is refused with a 400 naming the parameter and the bound, before any work on it.
 *
 * The defaults keep the worst request inside a few hundred milliseconds of event-loop time
 * on the embedded model (measured; docs in README "Request bounds"); the grammar bounds
 * scale with the vocabulary, so a model with a large one may want them lower.
 */
import { z } from 'zod';
import { DEFAULT_GUIDED_LIMITS } from '../guided/limits.js';
import { setting } from './setting-surface.js';

const GROUP = 'Request bounds';

const bound = (min: number, fallback: number, help: string) => {
  const requirement = `must be an integer >= ${min}`;
  return setting(
    z
      .number({ error: requirement })
      .refine((v) => Number.isSafeInteger(v) && v >= min, { error: requirement })
      .default(fallback),
    { group: GROUP, help, text: 'int' },
  );
};

const percent = (fallback: number, help: string) => {
  const requirement = 'must be an integer from 1 to 100';
  return setting(
    z
      .number({ error: requirement })
      .refine((v) => Number.isSafeInteger(v) && v >= 1 && v <= 100, { error: requirement })
      .default(fallback),
    { group: GROUP, help, text: 'int' },
  );
};

export const REQUEST_BOUNDS_SHAPE = {
  /**
   * Bytes of a request body, refused with a 413 before it is parsed: room for a prompt at
   * maxPromptChars in UTF-8 (up to 4 bytes a character), while parsing stays well under a second.
   */
  maxRequestBytes: bound(1024, 16 * 1024 * 1024, 'request body bytes, a 413 before parsing'),
  /** n, best_of and the beam width of one request (the /generate spec's 128); never above maxRunningSequences. */
  maxSequencesPerRequest: bound(1, 128, 'n, best_of, the beam width, and prompts x n of one request'),
  /** Characters of a prompt's text (all its parts, or all chat messages' text), counted before tokenizing. */
  maxPromptChars: bound(1, 4 * 1024 * 1024, "characters of a prompt's text"),
  /**
   * Characters of a piece the tokenizer must take in one synchronous call (a run with no
   * space: CJK, one long word; a whole text for a tokenizer whose pre-tokenizer does not cut)
   * where tokenizing cannot leave the event loop (workerd; the page raises it to
   * maxPromptChars). BPE on such a piece costs ~1–6 µs a character once warm (CJK on a 32 K
   * byte-fallback vocabulary the slowest measured), so a slice's 16384 holds the loop ~0.1 s.
   * Node tokenizes such pieces on its tokenizer thread and ignores it.
   */
  maxInlinePieceChars: bound(1, 16 * 1024, 'characters of a piece the tokenizer takes in one call on the request thread (workerd)'),
  /** Inputs of one /v1/embeddings request (OpenAI's own limit is 2048). */
  maxEmbeddingInputs: bound(1, 2048, 'inputs of one /v1/embeddings request'),
  /** Distinct strings in a request's stop list. */
  maxStopStrings: bound(0, 128, 'distinct strings in stop'),
  /**
   * Distinct token ids in stop_token_ids. Each sequence checks every sampled token against
   * them, and min_tokens bans them from the logits each step: a model's stop ids are a handful.
   */
  maxStopTokenIds: bound(0, 1024, 'distinct token ids in stop_token_ids'),
  /** Entries of logit_bias (each one a logits write per sequence per step). */
  maxLogitBiasEntries: bound(0, 1024, 'entries of logit_bias'),
  /** Tools of one chat request (OpenAI's own limit is 128). */
  maxTools: bound(0, 128, 'tools of one chat request'),
  /**
   * Values over every list and map of a request outside its prompt (stop lists, logit_bias,
   * tools, messages and their parts, documents, chat_template_kwargs, ...), counted on the
   * body before its schema runs: a 16 MiB body of millions of small values is refused
   * before the server walks them.
   */
  maxRequestListItems: bound(1, 65_536, 'values over all lists and maps of a request outside its prompt'),
  /** Characters over all of a request's stop strings (the /generate spec's 32 K). */
  maxStopChars: bound(1, 32 * 1024, 'characters over all of stop'),
  /** Messages of one chat request. */
  maxMessages: bound(1, 1024, 'messages of one chat request'),
  /** Characters of a chat template sent with a request (chat_template). */
  maxChatTemplateChars: bound(1, 64 * 1024, "characters of a request's own chat_template"),
  /**
   * Evaluation steps (expressions, loop iterations, output pieces) one chat template rendering
   * may take. Real templates take 13–170 a message (one 385): this covers maxMessages with any
   * of the 50 measured; under Node a rendering past a few ms' steps runs on the template thread.
   */
  maxChatTemplateSteps: bound(1, 500_000, 'evaluation steps of one chat template rendering'),
  /** Milliseconds one chat template rendering may take on Node's template thread (its deadline). */
  maxChatTemplateMs: bound(1, 10_000, 'milliseconds one chat template rendering may take'),
  /** Characters of a structured-output constraint as sent: guided_json / response_format schema, guided_regex, guided_choice. */
  maxGuidedSourceChars: bound(1, 64 * 1024, 'characters of a structured-output constraint as sent'),
  /** Nesting depth of a guided_json schema (objects and arrays) and of a regular expression's groups. */
  maxGuidedNestingDepth: bound(1, DEFAULT_GUIDED_LIMITS.maxGuidedNestingDepth, "nesting of a schema or a regex's groups"),
  /** Properties over all objects of a guided_json schema. */
  maxGuidedProperties: bound(1, DEFAULT_GUIDED_LIMITS.maxGuidedProperties, 'properties over all objects of a schema'),
  /** Largest repetition count: regex {m,n}, minLength / maxLength, minItems / maxItems. */
  maxGuidedRepetition: bound(1, DEFAULT_GUIDED_LIMITS.maxGuidedRepetition, 'largest repetition count of a constraint'),
  /** Characters of the grammar a constraint compiles to (expanded repetitions included): bounds XGrammar's compile time. */
  maxGrammarChars: bound(1, DEFAULT_GUIDED_LIMITS.maxGrammarChars, 'characters of the grammar a constraint expands to'),
  /** Grammar characters × vocabulary size (compile time grows with both): large vocabularies get smaller grammars. */
  maxGrammarWork: bound(1, DEFAULT_GUIDED_LIMITS.maxGrammarWork, "XGrammar's estimated compile work (vocabulary x grammar)"),
  /**
   * The share of the batch (maxRunningSequences) one request's sequences may hold, in
   * percent: n × prompts, best_of, the beam width. At 50 a request arriving beside the
   * widest one finds free rows and starts at the next step.
   */
  maxRequestSlotPercent: percent(50, 'the share of --max-num-seqs one request may hold (1-100)'),
  /**
   * The share of the batch, in percent, that requests' extra sequences hold together: each
   * request's sequences beyond its first (n × prompts, best_of, the beam width). A request
   * whose extra sequences do not fit waits, and requests with one sequence pass it, so two
   * widest requests cannot fill the batch (the engine's scheduler applies it).
   */
  maxExtraSequenceSlotPercent: percent(50, "the share of --max-num-seqs requests' extra sequences hold together (1-100)"),
  /**
   * Logprob entries (a token, or one of its alternatives) one request may report at most:
   * sequences × (max_tokens × (logprobs + 1) + prompt tokens × (prompt logprobs + 1)),
   * judged up front from the worst case. ~90 bytes of JSON each: the default bounds a
   * response near 24 MB.
   */
  maxLogprobEntries: bound(1, 262_144, 'logprob entries one request may report'),
};

export type RequestBounds = { [K in keyof typeof REQUEST_BOUNDS_SHAPE]: number };

export const REQUEST_BOUND_KEYS = Object.keys(REQUEST_BOUNDS_SHAPE) as (keyof RequestBounds)[];

/** The environment variable of a setting: maxPromptChars → MAX_PROMPT_CHARS (the Worker's rule too). */
export function boundEnvName(key: string): string {
  return key.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase();
}

export const DEFAULT_REQUEST_BOUNDS: RequestBounds = z.object(REQUEST_BOUNDS_SHAPE).parse({});

/** The request bounds of a server configuration (or of any object carrying them). */
export function requestBoundsOf(config: Partial<RequestBounds>): RequestBounds {
  const out = { ...DEFAULT_REQUEST_BOUNDS };
  for (const key of REQUEST_BOUND_KEYS) if (typeof config[key] === 'number') out[key] = config[key]!;
  return out;
}

/**
 * A page's settings: it serves one user in their own tab, where a long piece tokenized on the
 * request thread holds only that tab, so maxInlinePieceChars defaults to maxPromptChars there
 * (the context's length bound still applies before any tokenizing).
 */
export function withPageBounds<T extends Partial<RequestBounds>>(config: T): T {
  return { maxInlinePieceChars: config.maxPromptChars ?? DEFAULT_REQUEST_BOUNDS.maxPromptChars, ...config };
}
