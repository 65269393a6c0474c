/** An embedding engine's serving options from the server configuration, for every home that loads one with loadEmbeddingEngine. */
import { schedulerLimitsOf, type ServerConfig } from '../config/server-config.js';
import type { LoadEmbeddingOptions } from '../embeddings/load.js';

export type EmbeddingServingOptions = Pick<LoadEmbeddingOptions, 'servedModelName' | 'limits' | 'maxSeqLen' | 'poolerOverride'>;

/** `maxBatchedTokens` lowers the scheduler's (a home whose memory holds less, as the Worker's isolate). */
export function embeddingServingOptions(config: ServerConfig, maxBatchedTokens?: number): EmbeddingServingOptions {
  const limits = schedulerLimitsOf(config);
  return {
    servedModelName: config.servedModelName,
    limits: {
      maxRunningSequences: limits.maxRunningSequences,
      maxBatchedTokens: Math.min(maxBatchedTokens ?? limits.maxBatchedTokens, limits.maxBatchedTokens),
      maxWaitingRequests: limits.maxWaitingRequests,
    },
    maxSeqLen: config.maxSeqLen,
    poolerOverride: config.poolerConfig === undefined ? undefined : { poolingType: config.poolerConfig.pooling_type, normalize: config.poolerConfig.normalize },
  };
}
