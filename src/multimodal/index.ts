/** Vision-language models: image processors per family, the vision encoder, prompt expansion. */
export { VisionLanguageModel, type MultimodalPrompt, type PromptImage, type VisionLanguageFiles } from './model.js';
export { DEFAULT_MULTIMODAL_LIMITS, MultimodalRequestError, type ImageProcessor, type MultimodalLimits, type ProcessedImage } from './types.js';
