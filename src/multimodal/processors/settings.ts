/**
 * The plain-data settings each image processor is built from, read from the model's
 * processor config. Kept apart from the processors so the processor spec in ../types.ts
 * (which the media decoding thread receives) can name them without importing the
 * processors, which import ../types.ts.
 */
import type { PilFilterName } from '../pil-resample.js';

export interface Idefics3Settings {
  doResize: boolean;
  longestEdge: number;
  resample: PilFilterName;
  doImageSplitting: boolean;
  tile: number;
  rescale: number | null;
  mean: number[] | null;
  std: number[] | null;
  imageSeqLen: number;
}

export interface LlavaSettings {
  shortestEdge: number | null;
  resample: PilFilterName;
  crop: { height: number; width: number } | null;
  rescale: number | null;
  mean: number[] | null;
  std: number[] | null;
  imageTokens: number;
}
