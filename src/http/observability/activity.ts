/**
 * What the server is doing, request by request: each request gets a record from the
 * moment the app sees it until its response (a stream included) is over. The records
 * feed the metrics, write the one log line per request, and let a shutting-down server
 * cut the generations still running when its grace period ends.
 *
 * Runtime-neutral (performance.now, no timers of its own). In workerd performance.now()
 * only advances across I/O, so durations there are coarse.
 */
import type { EngineStats, FinishReason, GenerationDelta } from '../../engine/types.js';
import type { RegistrySnapshot } from './prometheus.js';
import { ServerMetrics } from './server-metrics.js';
import { clientRequestId } from '../ids.js';

/** What a generation reports to its request's record (GenerationRun calls these). */
export interface GenerationObserver {
  /** Submitted to the engine; `cut` ends it early with `error` (shutdown). */
  submitted(promptTokens: number, cut: (error: Error) => void): void;
  delta(delta: GenerationDelta): void;
  /** The generation is over (finished, aborted, cut or failed); called once. */
  ended(error?: unknown): void;
}

export interface ActivityOptions {
  modelName: string;
  /** The served context length: the token-count histograms' top bucket. */
  maxModelLen: number;
  /** Where request log lines go; none: no request log. */
  log?: (line: string) => void;
  /** Put the prompt text in the log line. */
  logPrompts?: boolean;
  /** The engine's own counts, for the metrics (prefix cache, KV usage). */
  engineStats?: () => EngineStats;
}

const now = () => performance.now();
const milliseconds = (ms: number) => Math.round(ms * 10) / 10;

export class RequestRecord implements GenerationObserver {
  readonly id: string;
  private readonly startedAt = now();
  private status = 0;
  private handlerDone = false;
  private generation: 'none' | 'waiting' | 'running' | 'ended' = 'none';
  private promptTokens: number | null = null;
  private generatedTokens = 0;
  private firstTokenAt: number | null = null;
  private readonly lastTokenAt = new Map<number, number>();
  private readonly finishReasons = new Map<number, FinishReason>();
  private cutGeneration: ((error: Error) => void) | null = null;
  private streamError: string | null = null;
  private prompt: string | null = null;
  private closed = false;

  constructor(
    private readonly activity: ServerActivity,
    readonly method: string,
    readonly route: string,
    requestId: string | null,
  ) {
    this.id = requestId ?? crypto.randomUUID().replaceAll('-', '');
  }

  get waiting(): boolean {
    return this.generation === 'waiting';
  }

  get running(): boolean {
    return this.generation === 'running';
  }

  /** The prompt as text, kept only when the log asks for prompts. */
  notePrompt(text: string): void {
    if (this.activity.logPrompts) this.prompt = text;
  }

  submitted(promptTokens: number, cut: (error: Error) => void): void {
    this.promptTokens = promptTokens;
    this.generation = 'waiting';
    this.cutGeneration = cut;
  }

  delta(delta: GenerationDelta): void {
    const at = now();
    if (this.firstTokenAt === null) {
      // The prompt is processed once the first token exists (vLLM counts prefill tokens then).
      this.firstTokenAt = at;
      this.activity.metrics.generationStarted(this.promptTokens ?? 0);
      this.activity.metrics.firstToken((at - this.startedAt) / 1000);
    }
    if (delta.queueSeconds !== undefined) this.activity.metrics.queued(delta.queueSeconds);
    if (this.generation === 'waiting') this.generation = 'running';
    const previous = this.lastTokenAt.get(delta.index);
    const count = delta.tokenIds.length;
    this.generatedTokens += count;
    this.activity.metrics.tokens(count, previous === undefined ? null : (at - previous) / 1000);
    if (count > 0) this.lastTokenAt.set(delta.index, at);
    if (delta.finishReason !== null) this.finishReasons.set(delta.index, delta.finishReason);
  }

  ended(error?: unknown): void {
    if (this.generation === 'ended' || this.generation === 'none') return;
    this.generation = 'ended';
    this.cutGeneration = null;
    if (error !== undefined) this.streamError = error instanceof Error ? error.message : String(error);
    // Refused or failed before any token (queue full, cut while queued): the error status counts it, not the finish counters.
    if (this.firstTokenAt === null && error !== undefined) {
      this.closeIfDone();
      return;
    }
    // Sequences that never reported a finish were aborted (client gone, cut, failure).
    const sequences = Math.max(1, this.lastTokenAt.size, this.finishReasons.size);
    const reasons: FinishReason[] = [...this.finishReasons.values()];
    while (reasons.length < sequences) reasons.push('abort');
    this.activity.metrics.generationEnded(reasons, this.generatedTokens, (now() - this.startedAt) / 1000);
    this.closeIfDone();
  }

  /** Ends a running generation early; false when there is none. */
  cut(error: Error): boolean {
    if (this.cutGeneration === null) return false;
    this.cutGeneration(error);
    return true;
  }

  /** The handler returned this status (a stream may still be running). */
  responded(status: number): void {
    this.status = status;
    this.handlerDone = true;
    if (status >= 400) this.activity.metrics.refusal(status);
    this.closeIfDone();
  }

  private closeIfDone(): void {
    if (this.closed || !this.handlerDone) return;
    if (this.generation === 'waiting' || this.generation === 'running') return;
    this.closed = true;
    this.activity.closed(this, this.logLine());
  }

  private logLine(): Record<string, unknown> {
    const line: Record<string, unknown> = {
      time: new Date().toISOString(),
      id: this.id,
      method: this.method,
      route: this.route,
      status: this.status,
      duration_ms: milliseconds(now() - this.startedAt),
    };
    if (this.promptTokens !== null) {
      line.prompt_tokens = this.promptTokens;
      line.generation_tokens = this.generatedTokens;
      line.finish_reasons = [...this.finishReasons.entries()].sort(([a], [b]) => a - b).map(([, reason]) => reason);
      if (this.firstTokenAt !== null) line.ttft_ms = milliseconds(this.firstTokenAt - this.startedAt);
    }
    if (this.streamError !== null) line.error = this.streamError;
    if (this.prompt !== null) line.prompt = this.prompt;
    return line;
  }
}

export class ServerActivity {
  readonly metrics: ServerMetrics;
  readonly logPrompts: boolean;
  private readonly open = new Set<RequestRecord>();
  private readonly log: ((line: string) => void) | undefined;
  private idleWaiters: Array<() => void> = [];
  /** Set by a shutting-down server: new requests get a 503. */
  draining = false;
  /**
   * Set by a runtime with several processes behind one port (Node's data parallelism):
   * fetches the others' metrics so that any process's /metrics covers them all.
   */
  peerMetrics: (() => Promise<RegistrySnapshot[]>) | null = null;

  constructor(options: ActivityOptions) {
    this.log = options.log;
    this.logPrompts = options.logPrompts ?? false;
    this.metrics = new ServerMetrics(options.modelName, options.maxModelLen, {
      running: () => this.count((record) => record.running),
      waiting: () => this.count((record) => record.waiting),
      engineStats: options.engineStats,
    });
  }

  begin(request: Request, route: string): RequestRecord {
    const record = new RequestRecord(this, request.method, route.slice(0, 256), clientRequestId(request.headers.get('x-request-id')));
    this.open.add(record);
    return record;
  }

  /** GET /metrics' body: this process's metrics, its peers' added in. */
  async metricsText(): Promise<string> {
    const others = this.peerMetrics === null ? [] : await this.peerMetrics().catch(() => []);
    return this.metrics.render(others);
  }

  /** Requests not yet answered in full (streams still running included). */
  get openRequests(): number {
    return this.open.size;
  }

  /** Ends every running generation with `error` (streams send it as their error event); returns how many. */
  cutGenerations(error: Error): number {
    let cut = 0;
    for (const record of this.open) if (record.cut(error)) cut += 1;
    return cut;
  }

  /** Resolves once no request is open. */
  idle(): Promise<void> {
    if (this.open.size === 0) return Promise.resolve();
    return new Promise((resolve) => this.idleWaiters.push(resolve));
  }

  /** @internal RequestRecord's end. */
  closed(record: RequestRecord, line: Record<string, unknown>): void {
    this.open.delete(record);
    if (this.log !== undefined) {
      try {
        this.log(JSON.stringify(line));
      } catch {
        // A broken log sink must not fail the request it reports.
      }
    }
    if (this.open.size === 0) {
      const waiters = this.idleWaiters;
      this.idleWaiters = [];
      for (const resolve of waiters) resolve();
    }
  }

  private count(test: (record: RequestRecord) => boolean): number {
    let total = 0;
    for (const record of this.open) if (test(record)) total += 1;
    return total;
  }
}
