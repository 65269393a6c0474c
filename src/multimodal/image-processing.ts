/**
 * A vision model's image processing (resizing, tiling, normalising: up to seconds of CPU
 * for a large image, bounded by MEDIA_MAX_PIXELS_PER_REQUEST) off the event loop. Where the
 * media pipeline has a decoding thread (MediaDecoder.runTask, Node) the processor is rebuilt
 * there from its spec and runs under the decode deadline (MEDIA_DECODE_TIMEOUT_MS); elsewhere
 * it runs here, one image at a time with a yield before each, like inline decoding.
 */
import { movableViews, type DecodedImage, type MediaDecoder, type MediaThreadTask } from '../media/index.js';
import { processParts } from './media-thread.js';
import { Idefics3Processor } from './processors/idefics3.js';
import { LlavaProcessor } from './processors/llava.js';
import {
  type ImageProcessor,
  type ImageProcessorSpec,
  type MultimodalLimits,
  type ProcessedImage,
  type PromptImage,
} from './types.js';

export function imageProcessorFromSpec(spec: ImageProcessorSpec): ImageProcessor {
  return spec.family === 'idefics3'
    ? new Idefics3Processor(spec.settings, spec.imageTokenId, spec.video)
    : new LlavaProcessor(spec.settings, spec.imageTokenId, spec.placeholder);
}

function processOne(processor: ImageProcessor, entry: PromptImage, limits: MultimodalLimits): ProcessedImage {
  return entry.video !== undefined ? processor.processVideo!(entry.video, entry.param, limits) : processor.process(entry.image, entry.param, limits);
}

interface ProcessImagesPayload {
  spec: ImageProcessorSpec;
  images: PromptImage[];
  limits: MultimodalLimits;
}

/** The decoding thread's side of the 'process-images' task (media-decode-worker.ts). */
export function runProcessImagesTask(payload: unknown): { result: ProcessedImage[]; transfer: ArrayBuffer[] } {
  const { spec, images, limits } = payload as ProcessImagesPayload;
  const processor = imageProcessorFromSpec(spec);
  const result = images.map((entry) => processOne(processor, entry, limits));
  return { result, transfer: movableViews(result.map((processed) => processed.pixels)).transfer };
}

/** The images with their pixels moved to the thread (the caller's copies are spent). */
function movedImages(images: readonly PromptImage[]): { images: PromptImage[]; transfer: ArrayBuffer[] } {
  const frames = images.map((entry) => (entry.video !== undefined ? entry.video.frames : [entry.image]));
  const { views, transfer } = movableViews(frames.flat().map((frame) => frame.rgb));
  let next = 0;
  const withRgb = (frame: DecodedImage): DecodedImage => ({ ...frame, rgb: views[next++] });
  const moved = images.map((entry): PromptImage =>
    entry.video !== undefined ? { param: entry.param, video: { ...entry.video, frames: entry.video.frames.map(withRgb) } } : { param: entry.param, image: withRgb(entry.image) },
  );
  return { images: moved, transfer };
}

/**
 * Every image and video through `processor`, in order. Throws MultimodalRequestError (a
 * limit the processor checks), a MediaError 'timeout' past the deadline, or the signal's
 * reason once it aborts.
 */
export function processImages(
  processor: ImageProcessor,
  images: readonly PromptImage[],
  limits: MultimodalLimits,
  decoder?: MediaDecoder,
  signal?: AbortSignal,
): Promise<ProcessedImage[]> {
  const task = (): MediaThreadTask => {
    const moved = movedImages(images);
    const payload: ProcessImagesPayload = { spec: processor.spec, images: moved.images, limits };
    return { name: 'process-images', payload, transfer: moved.transfer, kind: 'image' };
  };
  return processParts(images, (entry) => processOne(processor, entry, limits), task, decoder, signal);
}
