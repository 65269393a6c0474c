import type { SamplingParams } from '../../sampling/params.js';

/**
 * The sampling defaults a model ships in generation_config.json, as vLLM reads them
 * (its get_diff_sampling_param): only fields a request may override.
 */
export function generationDefaultsFromConfig(generationConfig: Record<string, unknown> = {}): Partial<SamplingParams> {
  const defaults: Partial<SamplingParams> = {};
  const num = (key: string) => (typeof generationConfig[key] === 'number' ? (generationConfig[key] as number) : undefined);
  const temperature = num('temperature');
  const topK = num('top_k');
  const topP = num('top_p');
  const minP = num('min_p');
  const repetitionPenalty = num('repetition_penalty');
  if (temperature !== undefined) defaults.temperature = temperature;
  if (topK !== undefined) defaults.topK = topK;
  if (topP !== undefined) defaults.topP = topP;
  if (minP !== undefined) defaults.minP = minP;
  if (repetitionPenalty !== undefined) defaults.repetitionPenalty = repetitionPenalty;
  return defaults;
}
