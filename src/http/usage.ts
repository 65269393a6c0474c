/** OpenAI's usage block, counted in tokens. */
export interface UsageInfo {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
  /** Prompt tokens served from the prefix cache: only with enablePromptTokensDetails, and only when some were (vLLM's rule). */
  prompt_tokens_details?: { cached_tokens: number };
}

export function usageInfo(promptTokens: number, completionTokens: number, details?: { enabled: boolean; cachedTokens: number }): UsageInfo {
  const usage: UsageInfo = { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
  if (details?.enabled && details.cachedTokens > 0) usage.prompt_tokens_details = { cached_tokens: details.cachedTokens };
  return usage;
}

/** What `stream_options` asked for, resolved as vLLM does: continuous stats only with usage. */
export interface StreamUsageOptions {
  /** A final chunk with `choices: []` and the request's usage. */
  includeUsage: boolean;
  /** Usage (so far) on every chunk as well. */
  continuousUsage: boolean;
  /** usage.prompt_tokens_details when prompt tokens came from the prefix cache (the enablePromptTokensDetails setting). */
  promptTokensDetails?: boolean;
}

export function streamUsageOptions(
  streamOptions: { include_usage?: boolean | null; continuous_usage_stats?: boolean | null } | null | undefined,
  promptTokensDetails = false,
): StreamUsageOptions {
  const includeUsage = streamOptions?.include_usage === true;
  return { includeUsage, continuousUsage: includeUsage && streamOptions?.continuous_usage_stats === true, promptTokensDetails };
}
