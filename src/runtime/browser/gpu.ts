/**
 * fp16 on WebGPU: an fp16 / q4f16 graph computes in float16, which a WebGPU adapter runs
 * only with its `shader-f16` feature (many integrated and software adapters, SwiftShader
 * included, lack it). onnxruntime-web would fail on such a graph only once it is downloaded
 * and compiled, with a message about shaders; the page checks the adapter first and refuses
 * before the graph's bytes are fetched, naming a float32 variant to use instead.
 */
import { FLOAT16_DTYPES, MODEL_DTYPES, type ModelDtype, type OnnxFileChoice } from '../../engine/loading/model-variants.js';
import { variantsInSource, type ModelSource } from './model-source.js';

export const SHADER_F16 = 'shader-f16';

interface WebGpuNavigator {
  gpu?: { requestAdapter(): Promise<{ features: ReadonlySet<string> } | null> };
}

/** The default adapter's features (the one onnxruntime-web asks for too), or null without WebGPU. */
export async function webGpuAdapterFeatures(): Promise<ReadonlySet<string> | null> {
  const gpu = typeof navigator === 'undefined' ? undefined : (navigator as WebGpuNavigator).gpu;
  if (!gpu) return null;
  try {
    return (await gpu.requestAdapter())?.features ?? null;
  } catch {
    return null;
  }
}

/** Thrown when the adapter cannot run the chosen variant; its message is meant for the page as it is. */
export class AdapterCannotRunVariantError extends Error {
  override name = 'AdapterCannotRunVariantError';
}

/**
 * The refusal, or null when the adapter can run the variant: float32-arithmetic variants
 * run everywhere; fp16 / q4f16 ones need `shader-f16`. `alternatives` are the folder's
 * variants that would run (float32 arithmetic), suggested by their dtype setting.
 */
export function shaderF16Refusal(
  choice: OnnxFileChoice,
  features: ReadonlySet<string>,
  alternatives: ReadonlyArray<{ dtype: ModelDtype; file: string }>,
): string | null {
  if (choice.dtype === null || !FLOAT16_DTYPES.includes(choice.dtype) || features.has(SHADER_F16)) return null;
  const suggestion =
    alternatives.length > 0
      ? `Use a float32 variant of this folder: ${alternatives.map(({ dtype, file }) => `dtype=${dtype} (${file})`).join(', ')}`
      : 'The folder has no float32 variant: use one that has onnx/model.onnx with dtype=fp32 (or q4, int8)';
  return (
    `This GPU adapter lacks the WebGPU feature "${SHADER_F16}", which the ${choice.dtype} model ${choice.file} needs (it computes in float16). ` +
    `${suggestion}, or pick “In-page · WASM”, which runs ${choice.dtype} models. Nothing of the model was downloaded.`
  );
}

/** The float32-arithmetic dtypes, fp32 first: what to suggest instead of a float16 one. */
export const FLOAT32_ARITHMETIC_DTYPES: readonly ModelDtype[] = MODEL_DTYPES.filter((dtype) => !FLOAT16_DTYPES.includes(dtype));

/**
 * Throws AdapterCannotRunVariantError when the chosen variant needs `shader-f16` and the
 * adapter lacks it, after asking the source which float32 variants it has.
 */
export async function refuseVariantTheAdapterCannotRun(choice: OnnxFileChoice, features: ReadonlySet<string>, source: ModelSource): Promise<void> {
  if (shaderF16Refusal(choice, features, []) === null) return;
  const alternatives = await variantsInSource(source, FLOAT32_ARITHMETIC_DTYPES);
  throw new AdapterCannotRunVariantError(shaderF16Refusal(choice, features, alternatives)!);
}
