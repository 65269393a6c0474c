/**
 * The playground page: wires the form, the request preview, the engines and the results.
 * The page's entry (src/runtime/browser/playground.ts) calls startPlayground with the
 * loader of the in-page engine, so this UI never imports the engine itself and its
 * first download stays small.
 */
import { APIS, API_IDS, type ApiId } from './apis.js';
import { byId, h } from './dom.js';
import { createInspectPanel } from './inspect-panel.js';
import { createParamsPanel } from './params-panel.js';
import { createPromptEditor } from './prompt-editor.js';
import { buildRequestBody, curlCommand, inPageCurlNote, toJson, type RequestDraft } from './request.js';
import { createResultsView } from './results-view.js';
import { RunState } from './run-state.js';
import { defaultState, loadState, saveState, type PlaygroundState, type TargetId } from './store.js';
import { createTabs } from './tabs.js';
import { createEmbeddingsPanel } from './embeddings-panel.js';
import { createInPageTools } from './inpage-tools.js';
import { TARGET_LABELS, Targets, type InPageBenchmark, type InPageLoader } from './targets.js';
import { sendRequest } from './transport.js';
import { topLevelParam } from './param-path.js';
import { createWebLlmPanel, resolveChoice, type WebLlmCatalog } from './webllm-panel.js';
import { createGgufPanel, type GgufPick } from './gguf-panel.js';

export interface PlaygroundOptions {
  loadInPage: InPageLoader;
  /**
   * Resolves to true when WebGPU can run here, or to why not (no adapter, or a home that
   * does not serve its build); the WebGPU engine is offered only then.
   */
  webGpuAvailable: Promise<true | string>;
  /** Measures a started in-page engine (the "Benchmark" button). */
  benchmark?: InPageBenchmark;
  /** The in-page engine's cached files (Cache Storage), for the footer's size and Clear button. */
  cache?: { size(): Promise<{ files: number; bytes: number; page?: boolean }>; clear(): Promise<void> };
  storage?: Storage;
  /** web-llm's prebuilt models and caches, for the web-llm engine's model choice. */
  webllm?: WebLlmCatalog;
}

const TARGET_IDS: TargetId[] = ['server', 'wasm', 'webgpu', 'webllm'];

export function startPlayground(options: PlaygroundOptions): void {
  const storage = options.storage;
  const state: PlaygroundState = loadState(storage);

  const targetStatus = new Map<TargetId, { message: string; kind: 'loading' | 'ready' | 'error' }>();
  const statusLine = byId('engine-status');
  const showStatus = () => {
    const status = targetStatus.get(state.target);
    const label = TARGET_LABELS[state.target];
    statusLine.textContent = status ? `${label}: ${status.message}` : `${label}: connecting…`;
    statusLine.dataset.kind = status?.kind ?? 'idle';
  };
  // web-llm loads the model picked in its panel (below the engine choice).
  let webLlmPanel: ReturnType<typeof createWebLlmPanel> | undefined;
  // A GGUF picked in the page (or named by ?gguf=URL) replaces the in-page engines' model.
  const ggufUrl = new URLSearchParams(location.search).get('gguf');
  let gguf: GgufPick | null = ggufUrl ? { kind: 'url', url: ggufUrl } : null;
  const ggufPanel = createGgufPanel(byId('gguf-panel'), (pick) => {
    gguf = pick;
    targets.forget('wasm');
    targets.forget('webgpu');
    // The GGUF runs on onnxruntime-web: from the server or web-llm, WASM takes it.
    if (state.target === 'server' || state.target === 'webllm') byId<HTMLInputElement>('target-wasm').click();
    else targets.fetchFor(state.target).catch(() => {});
  }, ggufUrl ?? '');
  const loadInPage: InPageLoader = async (backend, loaderOptions) => {
    if (backend !== 'webllm') {
      const engine = await options.loadInPage(backend, { ...loaderOptions, ...(gguf ? { gguf } : {}) });
      ggufPanel.showReport(engine.report ?? []);
      return engine;
    }
    await webLlmPanel?.ready();
    const model = resolveChoice(state.webllm, webLlmPanel?.models() ?? []);
    if (typeof model === 'string') throw new Error(model);
    const engine = await options.loadInPage(backend, { ...loaderOptions, webllm: model });
    void webLlmPanel?.refreshCached();
    return engine;
  };
  const targets = new Targets(loadInPage, document.baseURI, (target, message, kind) => {
    targetStatus.set(target, { message, kind });
    showStatus();
    schedulePreview();
    if (target !== 'server' && kind !== 'loading') void tools.refresh();
  });

  // Engine choice.
  const engineBox = byId('engine');
  for (const id of TARGET_IDS) {
    const radio = h('input', { type: 'radio', name: 'target', value: id, id: `target-${id}`, checked: state.target === id });
    radio.addEventListener('change', () => {
      if (!radio.checked) return;
      state.target = id;
      changed();
      showStatus();
      void tools.refresh();
      // An error belongs to the engine that answered it: it must not sit under the new one.
      if (lastRun?.error && lastRunTarget !== id && !running) {
        results.clear();
        params.clearErrors('server');
        promptEditor.setError(null);
        continueButton.hidden = true;
      }
      // Start loading an in-page engine as soon as it is picked; Send then waits for the same load.
      if (id !== 'server') targets.fetchFor(id).catch(() => {});
    });
    engineBox.append(h('label', { for: `target-${id}`, class: 'engine-option' }, radio, TARGET_LABELS[id]));
  }
  showStatus();
  const webLlmBox = h('div', { class: 'webllm-panel', id: 'webllm-panel', hidden: state.target !== 'webllm' });
  engineBox.append(webLlmBox);
  if (options.webllm) {
    webLlmPanel = createWebLlmPanel(webLlmBox, options.webllm, state.webllm, () => {
      targets.forget('webllm');
      changed();
      if (state.target === 'webllm') targets.fetchFor('webllm').catch(() => {});
    });
    if (state.target === 'webllm') void webLlmPanel.open();
  }
  engineBox.addEventListener('change', () => {
    webLlmBox.hidden = state.target !== 'webllm';
    if (state.target === 'webllm') void webLlmPanel?.open();
  });
  const webGpuRadio = byId<HTMLInputElement>('target-webgpu');
  const webLlmRadio = byId<HTMLInputElement>('target-webllm');
  webLlmRadio.disabled = true;
  webGpuRadio.disabled = true;
  webGpuRadio.parentElement!.title = 'Checking for WebGPU…';
  void options.webGpuAvailable.then((available) => {
    webGpuRadio.disabled = available !== true;
    webGpuRadio.parentElement!.title = available === true ? 'Runs the model on the GPU through onnxruntime-web’s WebGPU backend' : available;
    if (available !== true && state.target === 'webgpu') byId<HTMLInputElement>('target-wasm').click();
  });
  // web-llm runs on WebGPU only; where there is none, WASM is the fallback.
  webLlmRadio.parentElement!.title = options.webllm ? 'Checking for WebGPU…' : 'web-llm is not part of this page';
  void (options.webllm?.available ?? Promise.resolve('web-llm is not part of this page')).then((available) => {
    webLlmRadio.disabled = available !== true;
    webLlmRadio.parentElement!.title = available === true ? 'Runs an MLC model with web-llm’s compiled WebGPU kernels' : available;
    if (webLlmRadio.disabled && state.target === 'webllm') byId<HTMLInputElement>('target-wasm').click();
  });

  // API tabs and the request options.
  // The Embeddings tab is not one of the generation APIs: it swaps the request panels for its own.
  const embeddingsPanel = byId('embeddings-panel');
  // It asks the engine picked above: the server, or the model running in this page.
  createEmbeddingsPanel(embeddingsPanel, async () => {
    const target = state.target;
    try {
      return { fetch: await targets.fetchFor(target), where: TARGET_LABELS[target] };
    } catch (error) {
      throw new Error(`The ${TARGET_LABELS[target]} engine could not start: ${(error as Error).message}`);
    }
  });
  const apiTabs = [
    ...API_IDS.map((id) => ({ id, label: APIS[id].label, title: APIS[id].path })),
    { id: 'embeddings' as const, label: 'Embeddings', title: '/v1/embeddings', controls: 'embeddings-panel' },
  ];
  createTabs<ApiId | 'embeddings'>(byId('api-tabs'), apiTabs, state.api, (tab) => {
    const embeddings = tab === 'embeddings';
    byId('app').classList.toggle('embeddings-mode', embeddings);
    embeddingsPanel.hidden = !embeddings;
    if (embeddings) return;
    state.api = tab;
    renderForApi();
    changed();
  });
  const promptEditor = createPromptEditor(byId('prompt-editor'), {
    onPrompt: (prompt) => {
      state.prompt = prompt;
      changed();
    },
    onMessages: (messages) => {
      state.messages = messages.map((m) => ({ ...m }));
      changed();
    },
  });

  const modelInput = h('input', { type: 'text', id: 'model', autocomplete: 'off', spellcheck: 'false', 'aria-describedby': 'model-help' });
  modelInput.value = state.model;
  modelInput.addEventListener('input', () => {
    state.model = modelInput.value;
    changed();
  });
  const modelHelp = h('p', { class: 'help', id: 'model-help' });
  const checkbox = (id: string, label: string, title: string, get: () => boolean, set: (v: boolean) => void) => {
    const input = h('input', { type: 'checkbox', id, checked: get() });
    input.addEventListener('change', () => {
      set(input.checked);
      changed();
      renderForApi();
    });
    return { input, root: h('label', { class: 'check', for: id, title }, input, label) };
  };
  const stream = checkbox('stream', 'Stream tokens', 'stream: true — tokens arrive as Server-Sent Events', () => state.stream, (v) => (state.stream = v));
  const usage = checkbox('include-usage', 'Usage in stream', 'stream_options.include_usage — a final chunk with exact token counts', () => state.includeUsage, (v) => (state.includeUsage = v));
  const fullText = checkbox(
    'full-text',
    'Server sends full text (fullTextEnabled)',
    'MindIE’s fullTextEnabled server setting: each event carries the whole text so far. Match the server’s config.',
    () => state.fullText,
    (v) => (state.fullText = v),
  );
  byId('request-options').append(
    h('div', { class: 'field model-field' }, h('label', { for: 'model' }, h('code', {}, 'model')), modelInput, modelHelp),
    h('div', { class: 'toggles' }, stream.root, usage.root, fullText.root),
  );

  const params = createParamsPanel(byId('params'), (key, value) => {
    state.params[key] = value;
    params.setError(key, null, 'server');
    changed();
  });

  const results = createResultsView(byId('metrics'), byId('choices'), byId('api-error'));
  const inspect = createInspectPanel(byId('inspect-tabs'), byId('inspect-panels'));
  const continueButton = h('button', { type: 'button', class: 'link', id: 'continue-chat', hidden: true }, 'Add the reply to the conversation');
  byId('choices').after(continueButton);

  function renderForApi(): void {
    const family = APIS[state.api].family;
    byId('api-summary').replaceChildren(h('code', {}, `POST ${APIS[state.api].path}`), ` — ${APIS[state.api].summary}`);
    promptEditor.render(state.api, state.prompt, state.messages);
    params.setApi(state.api);
    usage.root.hidden = family !== 'openai' || !state.stream;
    fullText.root.hidden = state.api !== 'generate' || !state.stream;
    updateModelHint();
  }

  function updateModelHint(): void {
    const served = targets.model(state.target)?.id ?? targets.model('server')?.id ?? 'stories260k';
    if (APIS[state.api].family === 'openai') {
      modelInput.placeholder = served;
      modelHelp.textContent = 'Required by the OpenAI APIs: the served model name. Left empty, the page sends the served name.';
    } else {
      modelInput.placeholder = 'None';
      modelHelp.textContent = 'A LoRA adapter id (optional). Only the base model is served, so leave it empty.';
    }
  }

  function draft(): RequestDraft {
    const served = targets.model(state.target)?.id ?? targets.model('server')?.id ?? 'stories260k';
    const openai = APIS[state.api].family === 'openai';
    return {
      api: state.api,
      model: openai ? state.model.trim() || served : state.model,
      prompt: state.prompt,
      messages: state.messages,
      stream: state.stream,
      includeUsage: state.includeUsage,
      params: state.params,
    };
  }

  // The server's request schemas (zod) are the bulk of the page's script: they load after
  // the page is up, and the inline checks start as soon as they arrive.
  let validateRequest: typeof import('./validation.js').validateRequest | null = null;
  void import('./validation.js').then((module) => {
    validateRequest = module.validateRequest;
    schedulePreview();
  });

  // Preview: the request as it will be sent, and what the server's checks will say about it.
  let previewPending = false;
  function schedulePreview(): void {
    if (previewPending) return;
    previewPending = true;
    queueMicrotask(() => {
      previewPending = false;
      preview();
    });
  }

  function preview(): void {
    updateModelHint();
    const body = buildRequestBody(draft());
    const json = toJson(body, 2);
    const url = targets.url(APIS[state.api].path);
    const note = state.target === 'server' ? undefined : inPageCurlNote(targets.model(state.target)?.id ?? null, targets.model('server')?.id ?? null);
    inspect.set('curl', curlCommand(url, state.api, toJson(body), state.stream), note);
    inspect.set('request', `POST ${APIS[state.api].path}\n\n${json}`);

    if (!validateRequest) return;
    const problems = validateRequest(state.api, body);
    params.clearErrors('check');
    let promptProblem: string | null = null;
    const elsewhere: string[] = [];
    for (const [key, message] of problems) {
      if (key === 'prompt' || key === 'messages') promptProblem = message;
      else if (params.has(key)) params.setError(key, message, 'check');
      else elsewhere.push(message);
    }
    promptEditor.setError(promptProblem);
    const summary = byId('validation-summary');
    summary.replaceChildren();
    if (problems.size > 0) {
      const names = [...problems.keys()].map((k) => (k === '' ? 'request' : k));
      summary.append(
        h('span', { class: 'warn' }, `The server will refuse this request: ${problems.size === 1 ? 'a problem' : `${problems.size} problems`} with `),
        ...names.flatMap((name, i) => [i > 0 ? ', ' : '', h('code', {}, name)]),
        elsewhere.length > 0 ? ` — ${elsewhere.join('; ')}` : '',
        '. Send anyway to see its answer.',
      );
    }
  }

  function changed(): void {
    saveState(storage, state);
    schedulePreview();
  }

  // Sending.
  const sendButton = byId<HTMLButtonElement>('send');
  const stopButton = byId<HTMLButtonElement>('stop');
  let running: { controller: AbortController; state: RunState } | null = null;

  async function send(): Promise<void> {
    if (running) return;
    const d = draft();
    const target = state.target;
    const body = buildRequestBody(d);
    const json = toJson(body);
    params.clearErrors('server');
    document.getElementById('boot-message')?.remove();
    results.clear();
    continueButton.hidden = true;
    const controller = new AbortController();
    const run = new RunState(state.api, state.stream, performance.now(), state.api === 'generate' ? state.prompt : '', state.fullText);
    running = { controller, state: run };
    sendButton.disabled = true;
    stopButton.disabled = false;
    document.body.classList.add('busy');

    let frame = 0;
    const renderSoon = () => {
      if (frame !== 0) return;
      frame = requestAnimationFrame(() => {
        frame = 0;
        if (running?.state === run) {
          results.render(run, true);
          inspect.set('response', run.raw);
        }
      });
    };
    // Keeps the clock moving while waiting for the in-page engine or the first token.
    const ticker = setInterval(renderSoon, 100);
    try {
      results.render(run, true);
      // One column (a phone, a narrow window): the answer is below the request and its buttons,
      // out of sight; bring it into view as it starts.
      if (window.matchMedia('(max-width: 900px)').matches) {
        const smooth = !window.matchMedia('(prefers-reduced-motion: reduce)').matches;
        document.querySelector('.results')?.scrollIntoView({ behavior: smooth ? 'smooth' : 'auto', block: 'start' });
      }
      let apiFetch;
      try {
        apiFetch = await targets.fetchFor(target);
      } catch (error) {
        run.setError(`The ${TARGET_LABELS[target]} engine could not start: ${(error as Error).message}`, null);
        run.endedAt = performance.now();
        return;
      }
      // The wait for the engine is not the request's latency.
      run.startedAt = performance.now();
      await sendRequest(apiFetch, run, json, controller.signal, renderSoon);
    } finally {
      clearInterval(ticker);
      cancelAnimationFrame(frame);
      running = null;
      results.render(run, false);
      inspect.set('response', run.raw);
      sendButton.disabled = false;
      stopButton.disabled = true;
      document.body.classList.remove('busy');
      afterRun(run, target);
    }
  }

  let lastRun: RunState | null = null;
  let lastRunTarget: TargetId | null = null;

  function afterRun(run: RunState, target: TargetId): void {
    lastRun = run;
    lastRunTarget = target;
    if (run.error?.param) {
      const key = topLevelParam(run.error.param);
      if (key === 'prompt' || key === 'messages') promptEditor.setError(run.error.message);
      else if (params.has(key)) params.setError(key, run.error.message, 'server');
    }
    const reply = run.choices[0]?.text ?? '';
    continueButton.hidden = !(run.api === 'chat' && !run.error && reply !== '');
  }

  continueButton.addEventListener('click', () => {
    const reply = lastRun?.choices[0]?.text ?? '';
    state.messages = [...state.messages, { role: 'assistant', content: reply }];
    continueButton.hidden = true;
    renderForApi();
    changed();
  });

  function stop(): void {
    running?.controller.abort();
  }

  sendButton.addEventListener('click', () => void send());
  stopButton.addEventListener('click', stop);
  byId('reset-params').addEventListener('click', () => {
    state.params = defaultState().params;
    params.setValues(state.params);
    params.clearErrors('server');
    changed();
  });
  document.addEventListener('keydown', (event) => {
    if (event.key === 'Enter' && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      void send();
    } else if (event.key === 'Escape' && running) {
      event.preventDefault();
      stop();
    }
  });

  const tools = createInPageTools(options, () => state.target, (target) => targetStatus.get(target)?.kind === 'ready');
  void tools.refresh();

  params.setValues(state.params);
  renderForApi();
  preview();
  const boot = document.getElementById('boot-message');
  if (boot) boot.textContent = 'Press Send (or Ctrl+Enter) to generate.';
  void targets.probeServer().then((answered) => {
    // A static copy of the page has no server: the in-page engine is the only one that works.
    if (!answered && state.target === 'server') byId<HTMLInputElement>('target-wasm').click();
    else if (state.target !== 'server') targets.fetchFor(state.target).catch(() => {});
    updateModelHint();
    schedulePreview();
  });
}

