/**
 * Picks the upstream for each request and fails over. Upstreams serving the requested
 * model are tried in a weighted random order, healthy ones first; one that cannot be
 * reached (connect failure, after one retry), runs past its connect or first-byte
 * deadline (upstream-timeouts.ts) or answers 502/503/504 is marked down (passive
 * ejection) and the next one is tried; a 429 is tried elsewhere too, and the last
 * upstream's 429/503 with a short Retry-After is waited out while the retry budget
 * lasts. All of this happens before the client has received a single byte: once an
 * upstream's response is handed on, it is never retried (a stream cannot be resumed
 * elsewhere). A down upstream is tried again after `retryDownAfterMs` (doubled for each
 * failure in a row, up to 8×), or earlier when a health check (`probe`, GET /health)
 * finds it back; one that goes silent mid-stream (idle deadline) is marked down too.
 *
 * State lives in the isolate: each Worker isolate learns the fleet's health on its own
 * (passively from requests, actively from `probe`, which the gateway runs in the
 * background every `healthCheckIntervalMs` and from its Cron Trigger).
 */
import { UpstreamError, UpstreamTimeoutError } from '../engine/remote/errors.js';
import { ProtocolError } from '../common/protocol-error.js';
import { idleGuardedBody, timeoutError, withDeadline } from './upstream-timeouts.js';
import { upstreamUrl, type UpstreamTarget } from './upstreams.js';

export interface PoolOptions {
  retryDownAfterMs?: number;
  healthCheckTimeoutMs?: number;
  retry?: Partial<RetryPolicy>;
  /** Defaults to Math.random; tests pass a fixed sequence. */
  random?: () => number;
  now?: () => number;
}

/**
 * Retries before the client has a byte: every upstream tried counts as an attempt (at
 * most `maxAttempts` per request), and waiting out a 429/503's Retry-After on the same
 * upstream happens only while the request's `budgetMs` lasts.
 */
export interface RetryPolicy {
  maxAttempts: number;
  budgetMs: number;
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = { maxAttempts: 3, budgetMs: 2_000 };

interface Health {
  downUntil: number;
  /** Why it was marked down, for the error when nothing answers. */
  reason: string | null;
  /** Failures in a row: each doubles how long it stays out (up to 8×). */
  strikes: number;
}

/** What `send` hands back: the upstream's response (any status but a failover one) and who gave it. */
export interface Sent {
  response: Response;
  target: UpstreamTarget;
  /** From sending the request to the first byte of the response body (its headers, when it has none). */
  firstByteMs: number;
  attempts: number;
}

export interface SendOptions {
  signal?: AbortSignal;
  /** The client asked for a stream: headers come at once, so the connect deadline bounds them. */
  stream?: boolean;
  /** Sent with the request (request id, trace context). */
  headers?: Record<string, string>;
  /** Told of each upstream tried, in order (the request log names the last). */
  onAttempt?: (target: UpstreamTarget) => void;
}

/** A failover status: the upstream is unavailable, not the request wrong. */
const FAILOVER_STATUSES: ReadonlySet<number> = new Set([502, 503, 504]);
/** Statuses worth trying elsewhere (or again after Retry-After) before answering. */
const RETRY_STATUSES: ReadonlySet<number> = new Set([429, 502, 503, 504]);

type Exchange =
  | { kind: 'response'; response: Response; firstByteMs: number }
  | { kind: 'timeout'; error: UpstreamTimeoutError }
  | { kind: 'unreachable'; error: unknown };

function retryAfterMs(response: Response): number | null {
  const header = response.headers.get('retry-after');
  if (header === null) return null;
  const seconds = Number(header.trim());
  return Number.isFinite(seconds) && seconds >= 0 ? seconds * 1000 : null;
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => {
      clearTimeout(timer);
      reject(signal.reason);
    });
  });
}

export class UpstreamPool {
  readonly targets: readonly UpstreamTarget[];
  private readonly health = new Map<UpstreamTarget, Health>();
  private readonly retryDownAfterMs: number;
  private readonly healthCheckTimeoutMs: number;
  private readonly retry: RetryPolicy;
  private readonly random: () => number;
  private readonly now: () => number;
  /** Called whenever an upstream goes down or comes back (metrics). */
  onHealthChange: ((target: UpstreamTarget, up: boolean) => void) | null = null;

  constructor(targets: readonly UpstreamTarget[], options: PoolOptions = {}) {
    this.targets = targets;
    this.retryDownAfterMs = options.retryDownAfterMs ?? 10_000;
    this.healthCheckTimeoutMs = options.healthCheckTimeoutMs ?? 2_000;
    this.retry = { ...DEFAULT_RETRY_POLICY, ...options.retry };
    this.random = options.random ?? Math.random;
    this.now = options.now ?? Date.now;
    for (const target of targets) this.health.set(target, { downUntil: 0, reason: null, strikes: 0 });
  }

  /** The client-facing model names, in configuration order. */
  models(): string[] {
    return [...new Set(this.targets.map((t) => t.model))];
  }

  isHealthy(target: UpstreamTarget): boolean {
    return this.health.get(target)!.downUntil <= this.now();
  }

  /** The order to try `model`'s upstreams in: healthy ones by weighted lottery, then the down ones, soonest back first. */
  candidates(model: string): UpstreamTarget[] {
    const serving = this.targets.filter((t) => t.model === model);
    const healthy = serving.filter((t) => this.isHealthy(t));
    const down = serving.filter((t) => !this.isHealthy(t)).sort((a, b) => this.health.get(a)!.downUntil - this.health.get(b)!.downUntil);
    const ordered: UpstreamTarget[] = [];
    const pool = [...healthy];
    while (pool.length > 0) {
      const total = pool.reduce((sum, t) => sum + t.weight, 0);
      let ticket = this.random() * total;
      let pick = pool.length - 1;
      for (let i = 0; i < pool.length; i++) {
        ticket -= pool[i].weight;
        if (ticket < 0) {
          pick = i;
          break;
        }
      }
      ordered.push(pool.splice(pick, 1)[0]);
    }
    return [...ordered, ...down];
  }

  /** Takes `target` out of rotation (passive ejection); repeated failures keep it out longer. */
  markDown(target: UpstreamTarget, reason: string): void {
    const strikes = this.health.get(target)!.strikes + 1;
    const wasUp = this.isHealthy(target);
    this.health.set(target, { downUntil: this.now() + this.retryDownAfterMs * Math.min(8, 2 ** (strikes - 1)), reason, strikes });
    if (wasUp) this.onHealthChange?.(target, false);
  }

  markUp(target: UpstreamTarget): void {
    const wasUp = this.isHealthy(target);
    this.health.set(target, { downUntil: 0, reason: null, strikes: 0 });
    if (!wasUp) this.onHealthChange?.(target, true);
  }

  /** Readiness: which upstreams are in rotation now (names only: URLs and reasons stay private). */
  readiness(): { ready: boolean; upstreams: Array<{ name: string; model: string; up: boolean }> } {
    const upstreams = this.targets.map((t) => ({ name: t.name, model: t.model, up: this.isHealthy(t) }));
    return { ready: upstreams.some((u) => u.up), upstreams };
  }

  /**
   * POSTs `path` to the first of `model`'s upstreams that answers, within the retry
   * policy. `bodyFor` builds each upstream's body (its dialect): a ProtocolError from it
   * skips that upstream, and is thrown when no upstream can take the request. The last
   * retryable response (e.g. every upstream overloaded, 503) is returned as is; when
   * nothing answered at all, throws UpstreamTimeoutError (every failure a timeout) or
   * UpstreamError, listing why by upstream name.
   */
  async send(model: string, path: string, bodyFor: (target: UpstreamTarget) => string, options: SendOptions = {}): Promise<Sent> {
    const { signal } = options;
    const candidates = this.candidates(model);
    const budgetEnds = this.now() + this.retry.budgetMs;
    let refusal: ProtocolError | null = null;
    let lastRetryable: Sent | null = null;
    const failures: string[] = [];
    let timeouts = 0;
    let attempts = 0;
    for (let i = 0; i < candidates.length && attempts < this.retry.maxAttempts; i++) {
      const target = candidates[i];
      let body: string;
      try {
        body = bodyFor(target);
      } catch (error) {
        if (!(error instanceof ProtocolError)) throw error;
        refusal ??= error;
        continue;
      }
      attempts += 1;
      options.onAttempt?.(target);
      const exchange = await this.exchange(target, upstreamUrl(target.url, path), body, options);
      if (exchange.kind === 'timeout') {
        this.markDown(target, 'timed out');
        failures.push(exchange.error.message);
        timeouts += 1;
        continue;
      }
      if (exchange.kind === 'unreachable') {
        const reason = `cannot connect (${(exchange.error as Error).message})`;
        this.markDown(target, reason);
        failures.push(`${target.name}: ${reason}`);
        continue;
      }
      const { response, firstByteMs } = exchange;
      if (!RETRY_STATUSES.has(response.status)) {
        if (lastRetryable !== null) await lastRetryable.response.body?.cancel();
        this.markUp(target);
        return { response, target, firstByteMs, attempts };
      }
      if (FAILOVER_STATUSES.has(response.status)) this.markDown(target, `HTTP ${response.status}`);
      failures.push(`${target.name}: HTTP ${response.status}`);
      if (lastRetryable !== null) await lastRetryable.response.body?.cancel();
      lastRetryable = { response, target, firstByteMs, attempts };
      // The last candidate asked to be retried soon: wait for it if the budget allows.
      const wait = retryAfterMs(response);
      const lastCandidate = i === candidates.length - 1;
      if (lastCandidate && wait !== null && (response.status === 429 || response.status === 503) && attempts < this.retry.maxAttempts && this.now() + wait <= budgetEnds) {
        await sleep(wait, signal);
        await response.body?.cancel();
        lastRetryable = null;
        i -= 1;
      }
    }
    if (lastRetryable !== null) return lastRetryable;
    if (refusal !== null) throw refusal;
    if (candidates.length === 0) throw new UpstreamError(`No upstream serves the model ${JSON.stringify(model)}.`);
    if (timeouts > 0 && timeouts === failures.length) {
      throw new UpstreamTimeoutError(`No upstream for ${JSON.stringify(model)} answered in time: ${failures.join('; ')}`, candidates[0].name);
    }
    throw new UpstreamError(`No upstream for ${JSON.stringify(model)} could be reached: ${failures.join('; ')}.`);
  }

  /**
   * One request to one upstream under its deadlines, up to the first byte of the body;
   * the rest of the body is guarded by the idle deadline, whose expiry ejects the upstream.
   */
  private async exchange(target: UpstreamTarget, url: string, body: string, options: SendOptions): Promise<Exchange> {
    const { connectMs, firstByteMs, idleMs } = target.timeouts;
    const controller = new AbortController();
    const { signal } = options;
    if (signal?.aborted) throw signal.reason;
    signal?.addEventListener('abort', () => controller.abort(signal.reason));
    const startedAt = this.now();
    const headersMs = options.stream ? Math.min(connectMs, firstByteMs) : Math.max(connectMs, firstByteMs);
    const headers = { ...options.headers, ...headersFor(target) };
    let response: Response | null = null;
    let connectError: unknown = null;
    // Twice: a server that closes idle keep-alive connections (llama.cpp closes one
    // after each stream) fails the request that reuses it before reading a byte of it.
    for (let attempt = 0; attempt < 2 && response === null; attempt++) {
      try {
        const phase = options.stream || connectMs >= firstByteMs ? 'connect' : 'first byte';
        response = await withDeadline(target.fetch(url, { method: 'POST', headers, body, signal: controller.signal }), headersMs - (this.now() - startedAt), () =>
          timeoutError(target.name, phase, phase === 'connect' ? connectMs : firstByteMs),
        );
      } catch (error) {
        if (signal?.aborted) throw error;
        if (error instanceof UpstreamTimeoutError) {
          controller.abort(error);
          return { kind: 'timeout', error };
        }
        connectError = error;
      }
    }
    if (response === null) return { kind: 'unreachable', error: connectError };
    if (response.body === null) return { kind: 'response', response, firstByteMs: this.now() - startedAt };
    const reader = response.body.getReader();
    let first: ReadableStreamReadResult<Uint8Array>;
    try {
      first = await withDeadline(reader.read(), firstByteMs - (this.now() - startedAt), () => timeoutError(target.name, 'first byte', firstByteMs));
    } catch (error) {
      reader.cancel(error).catch(() => {});
      controller.abort(error);
      if (signal?.aborted) throw error;
      if (error instanceof UpstreamTimeoutError) return { kind: 'timeout', error };
      return { kind: 'unreachable', error };
    }
    const firstByteAt = this.now() - startedAt;
    const rest = first.done
      ? null
      : idleGuardedBody(first.value, reader, idleMs, () => {
          const error = timeoutError(target.name, 'idle', idleMs);
          this.markDown(target, 'idle timeout');
          controller.abort(error);
          return error;
        });
    return { kind: 'response', response: new Response(rest, { status: response.status, statusText: response.statusText, headers: response.headers }), firstByteMs: firstByteAt };
  }

  /** GETs `path` from one upstream (no failover), within the health-check timeout (and its connect deadline). */
  async get(target: UpstreamTarget, path: string): Promise<Response> {
    const ms = Math.min(this.healthCheckTimeoutMs, target.timeouts.connectMs);
    const controller = new AbortController();
    try {
      return await withDeadline(target.fetch(upstreamUrl(target.url, path), { method: 'GET', headers: headersFor(target), signal: controller.signal }), ms, () =>
        timeoutError(target.name, 'connect', ms),
      );
    } catch (error) {
      controller.abort(error);
      throw error;
    }
  }

  /** Active health check of every upstream (GET /health; any answer below 500 is healthy). */
  async probe(): Promise<void> {
    await Promise.all(
      this.targets.map(async (target) => {
        try {
          const response = await this.get(target, '/health');
          await response.body?.cancel();
          // Reachable and not unavailable (503 while loading): a 404 only means no /health route (OpenAI's API).
          if (response.status < 500) this.markUp(target);
          else this.markDown(target, `health check: HTTP ${response.status}`);
        } catch (error) {
          this.markDown(target, `health check: ${(error as Error).message}`);
        }
      }),
    );
  }
}

function headersFor(target: UpstreamTarget): Record<string, string> {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };
  if (target.apiKey) headers.authorization = `Bearer ${target.apiKey}`;
  return headers;
}
