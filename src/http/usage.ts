/** OpenAI's usage block, counted in tokens. */
export interface UsageInfo {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

export function usageInfo(promptTokens: number, completionTokens: number): UsageInfo {
  return { prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens };
}

/** What `stream_options` asked for, resolved as vLLM does: continuous stats only with usage. */
export interface StreamUsageOptions {
  /** A final chunk with `choices: []` and the request's usage. */
  includeUsage: boolean;
  /** Usage (so far) on every chunk as well. */
  continuousUsage: boolean;
}

export function streamUsageOptions(
  streamOptions: { include_usage?: boolean | null; continuous_usage_stats?: boolean | null } | null | undefined,
): StreamUsageOptions {
  const includeUsage = streamOptions?.include_usage === true;
  return { includeUsage, continuousUsage: includeUsage && streamOptions?.continuous_usage_stats === true };
}
