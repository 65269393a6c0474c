/**
 * Where requests go: the server that served the page, or the same app running inside
 * the page (onnxruntime-web on WASM, or WebGPU where the browser has it). The in-page
 * app is created on first use and kept; the page never talks to any other host.
 */
import type { TargetId } from './store.js';
import type { ApiFetch } from './transport.js';
import type { GgufPick } from './gguf-panel.js';
import type { WebLlmModelEntry } from './webllm-panel.js';

export type InPageBackend = Exclude<TargetId, 'server'>;

/** An app's fetch: takes a Request, answers with a Response, like Hono's `app.fetch`. */
export type AppFetch = (request: Request) => Response | Promise<Response>;

/** A started in-page app, and how it runs ("WebAssembly · 2 threads"), for the status line. */
export interface InPageEngine {
  fetch: AppFetch;
  details?: string;
  /** The engine's startup report (model, graph, GGUF lines), for the page to show. */
  report?: string[];
}

/** Supplied by the page's entry (src/runtime/browser/playground.ts): creates the in-page app. */
export type InPageLoader = (
  backend: InPageBackend,
  options: {
    servedModelName: string;
    onStatus: (message: string) => void;
    /** For 'webllm': the model to load. */
    webllm?: WebLlmModelEntry;
    /** For 'wasm' / 'webgpu': a GGUF to serve instead of the page's model folder. */
    gguf?: GgufPick;
  },
) => Promise<InPageEngine>;

/** A decode benchmark of a started in-page engine (src/runtime/browser/benchmark.ts). */
export type InPageBenchmark = (
  backend: InPageBackend,
  options: { tokens?: number; runs?: number; onRun?: (run: number, result: { stepsPerSecond: number }) => void },
) => Promise<{ tokens: number; prefillMs: number; stepsPerSecond: number }>;

export interface ModelSummary {
  id: string;
  maxModelLen: number | null;
}

export const TARGET_LABELS: Record<TargetId, string> = {
  server: 'Server',
  wasm: 'In-page · WASM',
  webgpu: 'In-page · WebGPU',
  webllm: 'In-page · web-llm',
};

/** The embedded model's served name, for in-page mode when no server answers /v1/models. */
const EMBEDDED_MODEL = 'stories260k';

export class Targets {
  private readonly inPage = new Map<InPageBackend, Promise<AppFetch>>();
  private serverModel: ModelSummary | null = null;
  private readonly models = new Map<TargetId, ModelSummary>();

  constructor(
    private readonly loader: InPageLoader,
    /** The page's URL: API paths resolve against it, so the page also works behind a path prefix. */
    private readonly baseUrl: string,
    private readonly onStatus: (target: TargetId, message: string, state: 'loading' | 'ready' | 'error') => void,
  ) {}

  /** An absolute URL for an API path ("/v1/models" → "http://host:port/v1/models"). */
  url(path: string): string {
    return new URL(path.replace(/^\//, ''), this.baseUrl).toString();
  }

  model(target: TargetId): ModelSummary | null {
    return this.models.get(target) ?? null;
  }

  private serverFetch: ApiFetch = (path, init) => fetch(this.url(path), init);

  private probe: Promise<boolean> | null = null;

  /** Asks the server which model it serves; false when no server answers (a static copy of the page). */
  probeServer(): Promise<boolean> {
    this.probe ??= this.askServerModel();
    return this.probe;
  }

  private async askServerModel(): Promise<boolean> {
    try {
      const response = await this.serverFetch('/v1/models', { method: 'GET' });
      if (!response.ok) throw new Error(`HTTP ${response.status}`);
      this.serverModel = readModel(await response.json());
      if (!this.serverModel) throw new Error('unexpected /v1/models body');
      this.models.set('server', this.serverModel);
      this.onStatus('server', `${this.serverModel.id} · context ${this.serverModel.maxModelLen ?? '?'} tokens`, 'ready');
      return true;
    } catch (error) {
      this.onStatus('server', `No server answers here (${(error as Error).message}): use an in-page engine.`, 'error');
      return false;
    }
  }

  /** Drops a target's in-page app (its model choice changed): the next use loads it again. */
  forget(target: InPageBackend): void {
    this.inPage.delete(target);
  }

  /** The fetch for a target, loading the in-page engine on first use. */
  async fetchFor(target: TargetId): Promise<ApiFetch> {
    if (target === 'server') return this.serverFetch;
    let app = this.inPage.get(target);
    if (!app) {
      app = this.loadInPage(target);
      this.inPage.set(target, app);
      // A failed load may succeed later (e.g. after a network hiccup): do not cache the failure.
      app.catch(() => this.inPage.delete(target));
    }
    const appFetch = await app;
    return (path, init) => Promise.resolve(appFetch(new Request(this.url(path), init)));
  }

  private async loadInPage(backend: InPageBackend): Promise<AppFetch> {
    const started = performance.now();
    // Serve under the server's model name when there is one, so the page's requests (and
    // its curl commands) are valid for both.
    await this.probe;
    const servedModelName = this.serverModel?.id ?? EMBEDDED_MODEL;
    try {
      const { fetch: appFetch, details } = await this.loader(backend, {
        servedModelName,
        onStatus: (message) => this.onStatus(backend, message, 'loading'),
      });
      const response = await appFetch(new Request(this.url('/v1/models')));
      const model = readModel(await response.json());
      if (model) this.models.set(backend, model);
      const seconds = ((performance.now() - started) / 1000).toFixed(1);
      const how = details ? ` · ${details}` : '';
      this.onStatus(backend, `${model?.id ?? servedModelName} running in this page${how} · ready in ${seconds} s`, 'ready');
      return appFetch;
    } catch (error) {
      this.onStatus(backend, `The in-page engine failed to start: ${(error as Error).message}`, 'error');
      throw error;
    }
  }
}

function readModel(body: unknown): ModelSummary | null {
  const first = (body as { data?: Array<{ id?: unknown; max_model_len?: unknown }> } | null)?.data?.[0];
  if (!first || typeof first.id !== 'string') return null;
  return { id: first.id, maxModelLen: typeof first.max_model_len === 'number' ? first.max_model_len : null };
}
