/** Vision- and audio-language models: processors per family, the media encoders, prompt expansion. */
export { VisionLanguageModel, type MultimodalPrompt, type ProcessedVisuals, type PromptImage, type VisionLanguageFiles } from './model.js';
export { DEFAULT_MULTIMODAL_LIMITS, MultimodalRequestError, type ImageProcessor, type MultimodalLimits, type ProcessedImage } from './types.js';
export { AudioLanguageModel, type AudioLanguageFiles, type AudioPrompt } from './audio-model.js';
export { DEFAULT_AUDIO_LIMITS, type AudioLimits, type AudioProcessor, type ProcessedAudio, type PromptAudio } from './audio/types.js';
