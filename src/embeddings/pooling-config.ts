/**
 * How an embedding model turns its last hidden states into one vector, read from the files
 * sentence-transformers saves beside the model (modules.json, the Pooling module's
 * config.json, config_sentence_transformers.json) or chosen by the operator (vLLM's
 * `--pooler-config`). What the files ask for and the engine cannot do (a Dense projection,
 * max pooling, ...) is refused at load with the reason: a vector pooled another way is a
 * wrong vector, silently.
 */

export type PoolingMode = 'mean' | 'cls' | 'last';

export interface PoolingSpec {
  mode: PoolingMode;
  /** L2-normalize the pooled vector (a Normalize module, or the operator's choice). */
  normalize: boolean;
  /** Where the choice came from, for the startup report. */
  source: string;
}

/** The sentence-transformers files of a model folder, as a runtime entry read them (absent: not in the folder). */
export interface SentenceTransformersFiles {
  /** modules.json */
  modules?: unknown;
  /** Each module's config.json by the module's path in modules.json (e.g. "1_Pooling"). */
  moduleConfigs?: Readonly<Record<string, unknown>>;
  /** config_sentence_transformers.json */
  settings?: unknown;
}

/** vLLM's `--pooler-config` fields the engine honours ({"pooling_type": "MEAN", "normalize": true}). */
export interface PoolerOverride {
  poolingType?: string;
  normalize?: boolean;
}

export class PoolingConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PoolingConfigError';
  }
}

const MODULE_KINDS = ['Transformer', 'Pooling', 'Normalize'] as const;
type ModuleKind = (typeof MODULE_KINDS)[number] | 'other';

/** "sentence_transformers.models.Pooling" (and v5's longer module paths) → "Pooling". */
function moduleKind(type: unknown): ModuleKind {
  if (typeof type !== 'string') return 'other';
  const name = type.slice(type.lastIndexOf('.') + 1);
  return (MODULE_KINDS as readonly string[]).includes(name) ? (name as ModuleKind) : 'other';
}

/** sentence-transformers' pooling mode names (v6's "pooling_mode", or the pooling_mode_* flags before it) → the mode served, null: not served. */
const ST_MODES: ReadonlyArray<[name: string, flag: string, mode: PoolingMode | null]> = [
  ['cls', 'pooling_mode_cls_token', 'cls'],
  ['mean', 'pooling_mode_mean_tokens', 'mean'],
  ['lasttoken', 'pooling_mode_lasttoken', 'last'],
  ['max', 'pooling_mode_max_tokens', null],
  ['mean_sqrt_len_tokens', 'pooling_mode_mean_sqrt_len_tokens', null],
  ['weightedmean', 'pooling_mode_weightedmean_tokens', null],
];

/** The Pooling module's config.json → the one mode the engine runs, or the reason it cannot. */
function poolingModeOf(config: Record<string, unknown>, where: string): PoolingMode {
  const named = config.pooling_mode;
  const names = typeof named === 'string' ? [named] : Array.isArray(named) ? named.map(String) : null;
  const on =
    names !== null
      ? names.map((name) => ST_MODES.find(([known]) => known === name) ?? ([name, name, null] as const))
      : ST_MODES.filter(([, flag]) => config[flag] === true);
  if (on.length === 0) throw new PoolingConfigError(`${where} turns on no pooling mode.`);
  if (on.length > 1) {
    throw new PoolingConfigError(`${where} concatenates several pooling modes (${on.map(([name]) => name).join(', ')}); only one mode (CLS, mean or last token) is served.`);
  }
  const [name, , mode] = on[0]!;
  if (mode === null) throw new PoolingConfigError(`${where} asks for "${name}" pooling; only CLS, mean and last-token pooling are served.`);
  if (config.include_prompt === false) {
    throw new PoolingConfigError(`${where} pools without the prompt's tokens (include_prompt: false), which is not served.`);
  }
  return mode;
}

function asObject(value: unknown): Record<string, unknown> | null {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

/** vLLM's pooling_type names. */
const POOLING_TYPES: Readonly<Record<string, PoolingMode>> = { CLS: 'cls', MEAN: 'mean', LAST: 'last' };

/**
 * The pooling a model is served with. Precedence: the operator's override (vLLM's
 * --pooler-config), then modules.json and its Pooling / Normalize modules, then vLLM's
 * defaults when the folder has no modules.json: CLS for an encoder (vLLM's BERT-family
 * embedding models), the last token for a decoder (vLLM's as_embedding_model), normalized.
 */
export function poolingSpecOf(files: SentenceTransformersFiles, model: { decoder: boolean }, override?: PoolerOverride): PoolingSpec {
  let spec = poolingFromFiles(files) ?? {
    mode: model.decoder ? 'last' : 'cls',
    normalize: true,
    source: `no modules.json: vLLM's default for ${model.decoder ? 'a decoder (last token)' : 'an encoder (CLS)'}, normalized`,
  };
  if (override?.poolingType !== undefined) {
    const mode = POOLING_TYPES[override.poolingType.toUpperCase()];
    if (mode === undefined) {
      throw new PoolingConfigError(`poolerConfig pooling_type "${override.poolingType}" is not served; use one of ${Object.keys(POOLING_TYPES).join(', ')}.`);
    }
    spec = { ...spec, mode, source: 'poolerConfig' };
  }
  if (override?.normalize !== undefined) spec = { ...spec, normalize: override.normalize, source: 'poolerConfig' };
  if (model.decoder && spec.mode === 'cls') {
    throw new PoolingConfigError('CLS pooling on a decoder reads the first token, which sees no other token (causal attention); such a model is not served.');
  }
  return spec;
}

function poolingFromFiles(files: SentenceTransformersFiles): PoolingSpec | null {
  if (files.modules === undefined) return null;
  if (!Array.isArray(files.modules)) throw new PoolingConfigError('modules.json must be a list of modules.');
  let mode: PoolingMode | null = null;
  let normalize = false;
  for (const [index, entry] of files.modules.entries()) {
    const module = asObject(entry);
    const kind = moduleKind(module?.type);
    const where = `modules.json[${index}] (${String(module?.type)})`;
    if (kind === 'other') {
      throw new PoolingConfigError(`${where} is a module the engine does not run (only Transformer, Pooling and Normalize are served; a Dense projection is not in the ONNX graph).`);
    }
    if (kind === 'Transformer' && index !== 0) throw new PoolingConfigError(`${where}: the Transformer module must come first.`);
    if (kind === 'Pooling') {
      if (mode !== null) throw new PoolingConfigError(`${where}: a second Pooling module.`);
      const path = typeof module?.path === 'string' ? module.path : '';
      const config = asObject(files.moduleConfigs?.[path]);
      if (config === null) throw new PoolingConfigError(`${where}: ${path === '' ? '' : `${path}/`}config.json is missing.`);
      mode = poolingModeOf(config, `${path}/config.json`);
    }
    if (kind === 'Normalize') {
      if (mode === null) throw new PoolingConfigError(`${where}: Normalize before any Pooling module.`);
      normalize = true;
    }
  }
  if (mode === null) throw new PoolingConfigError('modules.json has no Pooling module.');
  return { mode, normalize, source: 'modules.json' };
}

/** The prompts of config_sentence_transformers.json ({"query": "Instruct: ...", "document": ""}), and its default. */
export interface EmbeddingPrompts {
  prompts: Readonly<Record<string, string>>;
  /** The prompt sentence-transformers' encode applies when none is named; null: none. */
  defaultPromptName: string | null;
}

export function embeddingPromptsOf(settings: unknown): EmbeddingPrompts {
  const record = asObject(settings);
  const prompts: Record<string, string> = {};
  for (const [name, text] of Object.entries(asObject(record?.prompts) ?? {})) if (typeof text === 'string') prompts[name] = text;
  const named = record?.default_prompt_name;
  const defaultPromptName = typeof named === 'string' && named in prompts ? named : null;
  return { prompts, defaultPromptName };
}

/**
 * Matryoshka: which output sizes `dimensions` may ask for, as vLLM decides it from config.json:
 * "matryoshka_dimensions" lists them; "is_matryoshka": true allows any; neither: none (null).
 */
export function matryoshkaOf(config: Record<string, unknown>): { dimensions: readonly number[] | 'any' } | null {
  const listed = config.matryoshka_dimensions;
  if (Array.isArray(listed) && listed.length > 0 && listed.every((d) => Number.isSafeInteger(d) && (d as number) > 0)) {
    return { dimensions: listed as number[] };
  }
  if (config.is_matryoshka === true) return { dimensions: 'any' };
  return null;
}
