/**
 * What the gateway reports about itself: every request it answers (refusals at the edge
 * included: 401, 429, 400, 504, ...) counted by route, status, upstream and client key,
 * the time to the upstream's first byte per upstream, the tokens per upstream and key,
 * and upstream ejections; plus one JSON log line per request. Keys appear by their
 * configured name only, never the key; upstreams by name, never their URL. Per isolate,
 * like the rest of the gateway's state.
 */
import { Counter, HistogramVec, Registry } from '../http/observability/prometheus.js';
import type { GatewayExchange } from './exchange.js';

/** Routes named in labels; anything else is `other` (a label per probed path would grow without bound). */
const ROUTES: ReadonlySet<string> = new Set([
  '/v1/completions',
  '/v1/chat/completions',
  '/v1/models',
  '/generate',
  '/tokenize',
  '/detokenize',
  '/health',
  '/health/live',
  '/metrics',
  '/version',
]);

const FIRST_BYTE_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

export interface AnsweredRequest {
  method: string;
  path: string;
  status: number;
  exchange: GatewayExchange;
  durationMs: number;
  /** Why a stream ended early, when it did. */
  error?: string;
}

export class GatewayMetrics {
  private readonly registry = new Registry();
  private readonly requests = this.registry.add(
    new Counter('edge_llm_gateway_requests_total', 'Requests the gateway answered, by route, status, upstream (none: answered at the edge) and client key name.'),
  );
  private readonly firstByte = this.registry.add(
    new HistogramVec('edge_llm_gateway_time_to_first_byte_seconds', "From sending a request upstream to the first byte of the upstream's response body.", FIRST_BYTE_BUCKETS),
  );
  private readonly tokens = this.registry.add(
    new Counter('edge_llm_gateway_tokens_total', 'Tokens of answered requests (prompt, completion), by upstream and client key name, as the upstream reported them.'),
  );
  private readonly ejections = this.registry.add(
    new Counter('edge_llm_gateway_upstream_ejections_total', 'Times an upstream was taken out of rotation (failed connect, timeout, 5xx, failed health check).'),
  );

  constructor(private readonly log: ((line: string) => void) | null) {}

  answered(request: AnsweredRequest): void {
    const { exchange } = request;
    const upstream = exchange.upstream ?? 'none';
    const key = exchange.keyName ?? 'anonymous';
    const route = ROUTES.has(request.path) ? request.path : 'other';
    this.requests.inc({ route, status: String(request.status), upstream, key });
    if (exchange.firstByteMs !== null) this.firstByte.observe({ upstream }, exchange.firstByteMs / 1000);
    if (exchange.usage.prompt !== null) this.tokens.inc({ upstream, key, kind: 'prompt' }, exchange.usage.prompt);
    if (exchange.usage.completion !== null) this.tokens.inc({ upstream, key, kind: 'completion' }, exchange.usage.completion);
    if (this.log === null) return;
    const line: Record<string, unknown> = {
      time: new Date().toISOString(),
      id: exchange.id,
      method: request.method,
      route: request.path.slice(0, 256),
      status: request.status,
      key,
      upstream,
      duration_ms: request.durationMs,
    };
    if (exchange.upstreamHeaders.traceparent !== undefined) line.traceparent = exchange.upstreamHeaders.traceparent;
    if (exchange.attempts > 0) line.attempts = exchange.attempts;
    if (exchange.firstByteMs !== null) line.ttfb_ms = exchange.firstByteMs;
    if (exchange.usage.prompt !== null) line.prompt_tokens = exchange.usage.prompt;
    if (exchange.usage.completion !== null) line.completion_tokens = exchange.usage.completion;
    if (request.error !== undefined) line.error = request.error;
    try {
      this.log(JSON.stringify(line));
    } catch {
      // A broken log sink must not fail the request it reports.
    }
  }

  ejected(upstream: string): void {
    this.ejections.inc({ upstream });
  }

  render(): string {
    return this.registry.render();
  }
}
