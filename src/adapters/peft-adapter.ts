/**
 * PEFT LoRA adapters (a folder with adapter_config.json and adapter_model.safetensors, as
 * `PeftModel.save_pretrained` writes it), checked against the base graph's projections:
 * every tensor must name a module the base has, with the base's shapes, or the adapter is
 * refused naming the tensor. What the engine cannot apply exactly (DoRA, trained biases,
 * fully retrained modules) is refused rather than approximated.
 */
import type { LoraGraphLayout, LoraLane, LoraTarget } from './lora-graph.js';
import { ModulePattern, ModulePatternError, PatternBudget } from './module-pattern.js';
import { readSafetensorsHeader, readSafetensorsTensor, type SafetensorsEntry } from './safetensors.js';

export const ADAPTER_CONFIG_FILE = 'adapter_config.json';
export const ADAPTER_WEIGHTS_FILE = 'adapter_model.safetensors';

/** An adapter folder's two files, read by a runtime entry (disk, fetch, bundle). */
export interface AdapterFiles {
  config: unknown;
  weights: Uint8Array;
}

/** One module's low-rank update: ΔW = scale · B · A with A [rank, in] and B [out, rank] (nn.Linear layout). */
export interface LoraModuleWeights {
  layer: number;
  module: string;
  rank: number;
  scale: number;
  a: Float32Array;
  b: Float32Array;
}

export interface LoraAdapter {
  name: string;
  /** Where it was loaded from (/v1/models "root"). */
  path: string;
  /** The largest rank of its modules. */
  rank: number;
  modules: LoraModuleWeights[];
  /** Facts worth a line at load (fan_in_fan_out ignored, ...). */
  notes: string[];
}

export class AdapterError extends Error {}

/** Characters over all of an adapter's module patterns (target_modules, rank_pattern and alpha_pattern keys). */
const MAX_PATTERN_CHARS_TOTAL = 64 * 1024;
/** Characters of a tensor's name (PEFT's are ~70). */
const MAX_TENSOR_NAME_CHARS = 512;

const TENSOR_NAME = /^(?:.*\.)?layers\.(\d+)\.([A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+)*)\.lora_(A|B)(?:\.[A-Za-z0-9_]+)?\.weight$/;

export interface ParseAdapterOptions {
  name: string;
  path: string;
  layout: LoraGraphLayout;
  numLayers: number;
  maxRank: number;
}

export function parsePeftAdapter(files: AdapterFiles, options: ParseAdapterOptions): LoraAdapter {
  const { name, path, layout, numLayers, maxRank } = options;
  const fail = (message: string): never => {
    throw new AdapterError(`LoRA adapter "${name}" (${path}) cannot be loaded: ${message}`);
  };
  const config = files.config as Record<string, unknown> | null;
  if (config === null || typeof config !== 'object' || Array.isArray(config)) return fail(`${ADAPTER_CONFIG_FILE} is not a JSON object.`);
  const notes: string[] = [];

  const peftType = config.peft_type;
  if (peftType !== undefined && peftType !== 'LORA') fail(`peft_type is ${JSON.stringify(peftType)}; only LORA adapters are served.`);
  if (config.use_dora === true) fail('use_dora is true; DoRA adapters are not supported.');
  const bias = config.bias ?? 'none';
  if (bias !== 'none') fail(`bias is ${JSON.stringify(bias)}; only adapters without trained biases ("none") are supported.`);
  const modulesToSave = config.modules_to_save;
  if (Array.isArray(modulesToSave) && modulesToSave.length > 0) {
    fail(`modules_to_save (${modulesToSave.join(', ')}) replaces whole modules, which the engine does not support.`);
  }
  // PEFT LoRA options that change what the adapter computes beyond W + scale·B·A.
  if (config.lora_bias === true) fail('lora_bias is true (lora_B carries a trained bias); only adapters without biases are supported.');
  if (isSet(config.trainable_token_indices)) fail('trainable_token_indices is set (it retrains rows of the token embedding), which the engine does not support.');
  if (isSet(config.alora_invocation_tokens)) fail('alora_invocation_tokens is set (an activated LoRA, applied only after its invocation tokens), which the engine does not support.');
  if (isSet(config.layer_replication)) fail('layer_replication is set (it duplicates decoder layers), which the engine does not support.');
  if (isSet(config.target_parameters)) fail('target_parameters is set (LoRA on raw parameters, not on projections), which the engine does not support.');
  if (config.use_qalora === true) fail('use_qalora is true; QALoRA adapters are not supported.');
  const configRank = config.r ?? 8;
  if (typeof configRank !== 'number' || !Number.isInteger(configRank) || configRank <= 0) fail(`r must be a positive integer, got ${JSON.stringify(configRank)}.`);
  const alpha = config.lora_alpha ?? 8;
  if (typeof alpha !== 'number' || !Number.isFinite(alpha)) fail(`lora_alpha must be a number, got ${JSON.stringify(alpha)}.`);
  const rsLora = config.use_rslora === true;
  if (config.fan_in_fan_out === true) {
    // PEFT itself turns fan_in_fan_out off for nn.Linear targets (it is for GPT-2's Conv1D),
    // and lora_A / lora_B are saved as [r, in] / [out, r] either way.
    notes.push(`LoRA adapter "${name}": fan_in_fan_out is true, which applies to Conv1D layers only; the base's projections are linear, so it has no effect (as in PEFT).`);
  }
  const rankPattern = objectOf(config.rank_pattern);
  const alphaPattern = objectOf(config.alpha_pattern);
  // Patterns come from whoever wrote the file: compiled once, matched without backtracking, within one budget.
  let patternChars = typeof config.target_modules === 'string' ? config.target_modules.length : 0;
  for (const key of [...Object.keys(rankPattern), ...Object.keys(alphaPattern)]) patternChars += key.length;
  if (patternChars > MAX_PATTERN_CHARS_TOTAL) fail(`its module patterns have ${patternChars} characters in all, more than the ${MAX_PATTERN_CHARS_TOTAL} accepted.`);
  const compile = (pattern: string, field: string): ModulePattern => {
    try {
      return ModulePattern.compile(pattern);
    } catch (error) {
      if (error instanceof ModulePatternError) return fail(`${field} pattern ${JSON.stringify(pattern.slice(0, 80))}: ${error.message}.`);
      throw error;
    }
  };
  const rankPatterns = Object.keys(rankPattern).map((key) => [key, compile(key, 'rank_pattern')] as const);
  const alphaPatterns = Object.keys(alphaPattern).map((key) => [key, compile(key, 'alpha_pattern')] as const);
  const budget = new PatternBudget();
  const matches = (pattern: ModulePattern, key: string): boolean => {
    try {
      return pattern.matches(key, budget);
    } catch (error) {
      if (error instanceof ModulePatternError) return fail(`${error.message}.`);
      throw error;
    }
  };

  // target_modules: a list of module names (each must exist in the base), a regex, or "all-linear".
  const targetModules = config.target_modules;
  const targetPattern = typeof targetModules === 'string' && targetModules !== 'all-linear' ? compile(targetModules, 'target_modules') : null;
  const known = [...layout.modules];
  if (Array.isArray(targetModules)) {
    for (const module of targetModules) {
      if (typeof module !== 'string') fail(`target_modules must list module names, got ${JSON.stringify(module)}.`);
      const leaf = (module as string).split('.').pop()!;
      if (!layout.modules.has(leaf)) fail(`target module "${module}" is not a projection of the base model (it has ${known.join(', ')}).`);
    }
  } else if (targetModules !== undefined && targetModules !== null && typeof targetModules !== 'string') {
    fail(`target_modules must be a list or a string, got ${JSON.stringify(targetModules)}.`);
  }

  // Every tensor's name, range and shape is checked before any is copied (issue 41).
  const tensors = readSafetensorsHeader(files.weights, `${ADAPTER_WEIGHTS_FILE} of "${name}"`);
  const lanes = new Map<string, { target: LoraTarget; lane: LoraLane }>();
  for (const target of layout.targets) for (const lane of target.lanes) lanes.set(`${target.layer}.${lane.module}`, { target, lane });

  const pairs = new Map<string, { layer: number; module: string; fullName: string; a?: [string, SafetensorsEntry, number[]]; b?: [string, SafetensorsEntry, number[]] }>();
  for (const tensor of tensors) {
    const tensorName = tensor.name;
    // Bounded before the name pattern runs: its (.*\.)? is quadratic on a hostile name.
    if (tensorName.length > MAX_TENSOR_NAME_CHARS) fail(`a tensor name has ${tensorName.length} characters, more than the ${MAX_TENSOR_NAME_CHARS} accepted.`);
    const match = TENSOR_NAME.exec(tensorName);
    if (!match) fail(`tensor "${tensorName}" is not a lora_A / lora_B weight of a decoder layer's projection.`);
    const [, layerText, modulePath, kind] = match!;
    const layer = Number(layerText);
    const module = modulePath.split('.').pop()!;
    if (layer >= numLayers) fail(`tensor "${tensorName}" is for layer ${layer}, but the base model has ${numLayers} layers.`);
    if (!lanes.has(`${layer}.${module}`)) fail(`tensor "${tensorName}" targets "${module}", which the base model does not have (it has ${known.join(', ')}).`);
    const key = `${layer}.${module}`;
    const entry = pairs.get(key) ?? { layer, module, fullName: `model.layers.${layer}.${modulePath}` };
    if (entry[kind === 'A' ? 'a' : 'b'] !== undefined) fail(`module "${entry.fullName}" has two lora_${kind} tensors.`);
    entry[kind === 'A' ? 'a' : 'b'] = [tensorName, tensor, tensor.shape];
    pairs.set(key, entry);
  }
  if (pairs.size === 0) fail(`${ADAPTER_WEIGHTS_FILE} holds no lora_A / lora_B tensors.`);

  const planned: { layer: number; module: string; rank: number; scale: number; a: SafetensorsEntry; b: SafetensorsEntry }[] = [];
  let largestRank = 0;
  for (const [key, entry] of pairs) {
    const { target, lane } = lanes.get(key)!;
    if (!entry.a || !entry.b) fail(`module "${entry.fullName}" has a lora_${entry.a ? 'A' : 'B'} tensor but no lora_${entry.a ? 'B' : 'A'}.`);
    const [aName, a, aShape] = entry.a!;
    const [bName, b, bShape] = entry.b!;
    const rank = aShape[0];
    if (aShape.length !== 2 || aShape[1] !== target.inDim) {
      fail(`tensor "${aName}" has shape [${aShape.join(', ')}], but the base's ${entry.module} takes ${target.inDim} inputs (expected [r, ${target.inDim}]).`);
    }
    if (bShape.length !== 2 || bShape[0] !== lane.width || bShape[1] !== rank) {
      fail(`tensor "${bName}" has shape [${bShape.join(', ')}], expected [${lane.width}, ${rank}] (the base's ${entry.module} outputs ${lane.width}; lora_A's rank is ${rank}).`);
    }
    if (rank > maxRank) fail(`module "${entry.fullName}" has rank ${rank}, above maxLoraRank ${maxRank}.`);
    if (targetPattern !== null && !matches(targetPattern, entry.fullName)) {
      fail(`tensor "${aName}" is for a module that target_modules ("${targetModules}") does not select.`);
    }
    const rankKey = rankPatterns.find(([, pattern]) => matches(pattern, entry.fullName))?.[0];
    const declaredRank = rankKey !== undefined ? rankPattern[rankKey] : configRank;
    if (declaredRank !== rank) fail(`tensor "${aName}" has rank ${rank}, but adapter_config.json gives ${String(declaredRank)} for it.`);
    const alphaKey = alphaPatterns.find(([, pattern]) => matches(pattern, entry.fullName))?.[0];
    const moduleAlpha = alphaKey !== undefined ? Number(alphaPattern[alphaKey]) : (alpha as number);
    const scale = rsLora ? moduleAlpha / Math.sqrt(rank) : moduleAlpha / rank;
    planned.push({ layer: entry.layer, module: entry.module, rank, scale, a, b });
    largestRank = Math.max(largestRank, rank);
  }
  if (Array.isArray(targetModules)) {
    const leaves = new Set((targetModules as string[]).map((module) => module.split('.').pop()!));
    const present = new Set(planned.map((module) => module.module));
    for (const leaf of leaves) {
      if (!present.has(leaf)) fail(`target module "${leaf}" is listed in target_modules but ${ADAPTER_WEIGHTS_FILE} has no tensor for it.`);
    }
  }
  const read = (entry: SafetensorsEntry): Float32Array => readSafetensorsTensor(files.weights, entry).data;
  const modules: LoraModuleWeights[] = planned.map(({ a, b, ...module }) => ({ ...module, a: read(a), b: read(b) }));
  modules.sort((x, y) => x.layer - y.layer || x.module.localeCompare(y.module));
  return { name, path, rank: largestRank, modules, notes };
}

/** PEFT writes null (or an empty list / object) for an option left off. */
function isSet(value: unknown): boolean {
  if (value === null || value === undefined || value === false) return false;
  if (Array.isArray(value)) return value.length > 0;
  if (typeof value === 'object') return Object.keys(value).length > 0;
  return true;
}

function objectOf(value: unknown): Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : {};
}
