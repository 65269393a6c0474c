/**
 * Picks the upstream for each request and fails over. Upstreams serving the requested
 * model are tried in a weighted random order, healthy ones first; one that cannot be
 * reached (connect failure, after one retry) or answers 502/503/504 is marked down and the next one is
 * tried. All of this happens before the client has received a single byte: once an
 * upstream's response is handed on, it is never retried (a stream cannot be resumed
 * elsewhere). A down upstream is tried again after `retryDownAfterMs`, or earlier when a
 * health check (`probe`, GET /health) finds it back.
 *
 * State lives in the isolate: each Worker isolate learns the fleet's health on its own
 * (passively from requests, actively from `probe`, which the gateway runs in the
 * background every `healthCheckIntervalMs` and from its Cron Trigger).
 */
import { UpstreamError } from '../engine/remote-errors.js';
import { ProtocolError } from '../protocol/errors.js';
import { upstreamUrl, type UpstreamTarget } from './upstreams.js';

export interface PoolOptions {
  retryDownAfterMs?: number;
  healthCheckTimeoutMs?: number;
  /** Defaults to Math.random; tests pass a fixed sequence. */
  random?: () => number;
  now?: () => number;
}

interface Health {
  downUntil: number;
  /** Why it was marked down, for the error when nothing answers. */
  reason: string | null;
}

/** What `send` hands back: the upstream's response (any status but a failover one) and who gave it. */
export interface Sent {
  response: Response;
  target: UpstreamTarget;
}

const FAILOVER_STATUSES: ReadonlySet<number> = new Set([502, 503, 504]);

export class UpstreamPool {
  readonly targets: readonly UpstreamTarget[];
  private readonly health = new Map<UpstreamTarget, Health>();
  private readonly retryDownAfterMs: number;
  private readonly healthCheckTimeoutMs: number;
  private readonly random: () => number;
  private readonly now: () => number;

  constructor(targets: readonly UpstreamTarget[], options: PoolOptions = {}) {
    this.targets = targets;
    this.retryDownAfterMs = options.retryDownAfterMs ?? 10_000;
    this.healthCheckTimeoutMs = options.healthCheckTimeoutMs ?? 2_000;
    this.random = options.random ?? Math.random;
    this.now = options.now ?? Date.now;
    for (const target of targets) this.health.set(target, { downUntil: 0, reason: null });
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

  markDown(target: UpstreamTarget, reason: string): void {
    this.health.set(target, { downUntil: this.now() + this.retryDownAfterMs, reason });
  }

  markUp(target: UpstreamTarget): void {
    this.health.set(target, { downUntil: 0, reason: null });
  }

  /**
   * POSTs `path` to the first of `model`'s upstreams that answers. `bodyFor` builds each
   * upstream's body (its dialect): a ProtocolError from it skips that upstream, and is
   * thrown when no upstream can take the request. The last failover response (e.g. every
   * upstream overloaded, 503) is returned as is; when nothing answered at all, throws
   * UpstreamError listing why, by upstream name.
   */
  async send(model: string, path: string, bodyFor: (target: UpstreamTarget) => string, signal?: AbortSignal): Promise<Sent> {
    const candidates = this.candidates(model);
    let refusal: ProtocolError | null = null;
    let lastFailover: Sent | null = null;
    const failures: string[] = [];
    for (const target of candidates) {
      let body: string;
      try {
        body = bodyFor(target);
      } catch (error) {
        if (!(error instanceof ProtocolError)) throw error;
        refusal ??= error;
        continue;
      }
      let response: Response | null = null;
      let connectError: unknown = null;
      // Twice: a server that closes idle keep-alive connections (llama.cpp closes one
      // after each stream) fails the request that reuses it before reading a byte of it.
      for (let attempt = 0; attempt < 2 && response === null; attempt++) {
        try {
          response = await target.fetch(upstreamUrl(target.url, path), { method: 'POST', headers: headersFor(target), body, signal });
        } catch (error) {
          if (signal?.aborted) throw error;
          connectError = error;
        }
      }
      if (response === null) {
        const reason = `cannot connect (${(connectError as Error).message})`;
        this.markDown(target, reason);
        failures.push(`${target.name}: ${reason}`);
        continue;
      }
      if (FAILOVER_STATUSES.has(response.status)) {
        this.markDown(target, `HTTP ${response.status}`);
        failures.push(`${target.name}: HTTP ${response.status}`);
        if (lastFailover !== null) await lastFailover.response.body?.cancel();
        lastFailover = { response, target };
        continue;
      }
      if (lastFailover !== null) await lastFailover.response.body?.cancel();
      this.markUp(target);
      return { response, target };
    }
    if (lastFailover !== null) return lastFailover;
    if (refusal !== null) throw refusal;
    if (candidates.length === 0) throw new UpstreamError(`No upstream serves the model ${JSON.stringify(model)}.`);
    throw new UpstreamError(`No upstream for ${JSON.stringify(model)} could be reached: ${failures.join('; ')}.`);
  }

  /** GETs `path` from one upstream (no failover), with the health-check timeout. */
  async get(target: UpstreamTarget, path: string): Promise<Response> {
    return target.fetch(upstreamUrl(target.url, path), {
      method: 'GET',
      headers: headersFor(target),
      signal: AbortSignal.timeout(this.healthCheckTimeoutMs),
    });
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
