/**
 * The server's metrics under vLLM's names, help texts and buckets (vllm/engine/metrics.py
 * and its v1 successor), so dashboards and alerts written for vLLM read this server
 * unchanged; `model_name` is the served model name, as vLLM labels it. Refusals by reason
 * are this server's own (`edge_llm:` prefix): vLLM has no such series.
 *
 * Counted where the HTTP layer sees the requests, so they hold for every engine (local
 * model or remote delegate) and every home; they are per process (per isolate in workerd).
 */
import type { EngineStats, FinishReason } from '../../engine/types.js';
import { Counter, Gauge, Histogram, ReadCounter, Registry, type RegistrySnapshot } from './prometheus.js';

/** vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, 50, ... up to `max`. */
export function oneTwoFiveBuckets(max: number): number[] {
  const buckets: number[] = [];
  for (let exponent = 1; ; exponent *= 10) {
    for (const mantissa of [1, 2, 5]) {
      const value = mantissa * exponent;
      if (value > max) return buckets;
      buckets.push(value);
    }
  }
}

const TTFT_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0];
const INTER_TOKEN_BUCKETS = [0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0];
const REQUEST_LATENCY_BUCKETS = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0];

/** Why a request was answered with an error status, as the refusal counter labels it. */
export function refusalReason(status: number): string {
  switch (status) {
    case 400:
      return 'invalid_request';
    case 401:
      return 'unauthorized';
    case 403:
      return 'host_not_allowed';
    case 404:
      return 'not_found';
    case 405:
      return 'method_not_allowed';
    case 413:
      return 'body_too_large';
    case 415:
      return 'unsupported_media_type';
    case 503:
      return 'unavailable';
    default:
      return status >= 500 ? 'server_error' : 'client_error';
  }
}

export interface RequestLoad {
  /** Requests generating (first token out, last not yet). */
  running(): number;
  /** Requests submitted to the engine that have no token yet. */
  waiting(): number;
  /** The engine's own counts (prefix cache, KV usage); absent: none exposed. */
  engineStats?(): EngineStats;
}

export class ServerMetrics {
  private readonly registry: Registry;
  private readonly promptTokens: Counter;
  private readonly generationTokens: Counter;
  private readonly requestSuccess: Counter;
  private readonly refused: Counter;
  private readonly timeToFirstToken: Histogram;
  private readonly timePerOutputToken: Histogram;
  private readonly interTokenLatency: Histogram;
  private readonly e2eLatency: Histogram;
  private readonly requestPromptTokens: Histogram;
  private readonly requestGenerationTokens: Histogram;
  private readonly queueTime: Histogram;

  constructor(modelName: string, maxModelLen: number, load: RequestLoad) {
    const r = (this.registry = new Registry({ model_name: modelName }));
    r.add(new Gauge('vllm:num_requests_running', 'Number of requests in model execution batches.', () => load.running()));
    r.add(new Gauge('vllm:num_requests_waiting', 'Number of requests waiting to be processed.', () => load.waiting()));
    this.promptTokens = r.add(new Counter('vllm:prompt_tokens_total', 'Number of prefill tokens processed.'));
    this.generationTokens = r.add(new Counter('vllm:generation_tokens_total', 'Number of generation tokens processed.'));
    this.requestSuccess = r.add(new Counter('vllm:request_success_total', 'Count of successfully processed requests.'));
    this.timeToFirstToken = r.add(new Histogram('vllm:time_to_first_token_seconds', 'Histogram of time to first token in seconds.', TTFT_BUCKETS));
    this.timePerOutputToken = r.add(
      new Histogram('vllm:time_per_output_token_seconds', 'Histogram of time per output token in seconds.', INTER_TOKEN_BUCKETS),
    );
    this.interTokenLatency = r.add(
      new Histogram('vllm:inter_token_latency_seconds', 'Histogram of inter-token latency in seconds.', INTER_TOKEN_BUCKETS),
    );
    this.e2eLatency = r.add(
      new Histogram('vllm:e2e_request_latency_seconds', 'Histogram of end to end request latency in seconds.', REQUEST_LATENCY_BUCKETS),
    );
    const tokenBuckets = oneTwoFiveBuckets(maxModelLen);
    this.requestPromptTokens = r.add(new Histogram('vllm:request_prompt_tokens', 'Number of prefill tokens processed.', tokenBuckets));
    this.requestGenerationTokens = r.add(
      new Histogram('vllm:request_generation_tokens', 'Number of generation tokens processed.', tokenBuckets),
    );
    this.queueTime = r.add(
      new Histogram('vllm:request_queue_time_seconds', 'Histogram of time spent in WAITING phase for request.', REQUEST_LATENCY_BUCKETS),
    );
    const stats = () => load.engineStats?.();
    // vLLM's counters are exposed with prometheus_client's `_total` suffix, as vllm:prompt_tokens_total above.
    r.add(new ReadCounter('vllm:prefix_cache_queries_total', 'Prefix cache queries, in terms of number of queried tokens.', () => stats()?.prefixCache?.queries ?? 0));
    r.add(new ReadCounter('vllm:prefix_cache_hits_total', 'Prefix cache hits, in terms of number of cached tokens.', () => stats()?.prefixCache?.hits ?? 0));
    r.add(new Gauge('vllm:kv_cache_usage_perc', 'KV-cache usage. 1 means 100 percent usage.', () => stats()?.kvCacheUsage ?? 0, 'mean'));
    this.refused = r.add(new Counter('edge_llm:requests_refused_total', 'Requests answered with an error status, by reason.'));
  }

  /** The request left the queue for its prefill `seconds` after it arrived. */
  queued(seconds: number): void {
    this.queueTime.observe(seconds);
  }

  generationStarted(promptTokens: number): void {
    this.promptTokens.inc({}, promptTokens);
    this.requestPromptTokens.observe(promptTokens);
  }

  firstToken(seconds: number): void {
    this.timeToFirstToken.observe(seconds);
  }

  /** `count` tokens of one sequence arrived `seconds` after that sequence's previous ones. */
  tokens(count: number, secondsSincePrevious: number | null): void {
    this.generationTokens.inc({}, count);
    if (secondsSincePrevious === null || count === 0) return;
    // A speculative step releases several tokens at once: each gets its share of the gap.
    const each = secondsSincePrevious / count;
    for (let i = 0; i < count; i++) {
      this.timePerOutputToken.observe(each);
      this.interTokenLatency.observe(each);
    }
  }

  generationEnded(finishReasons: readonly FinishReason[], generatedTokens: number, seconds: number): void {
    for (const reason of finishReasons) this.requestSuccess.inc({ finished_reason: reason });
    this.requestGenerationTokens.observe(generatedTokens);
    this.e2eLatency.observe(seconds);
  }

  refusal(status: number): void {
    this.refused.inc({ reason: refusalReason(status) });
  }

  snapshot(): RegistrySnapshot {
    return this.registry.snapshot();
  }

  /** The exposition; `others`: the snapshots of the other engine processes behind the same port. */
  render(others: readonly RegistrySnapshot[] = []): string {
    return this.registry.render(others);
  }
}
