/**
 * The web-llm engine's model choice, under the engine picker when "In-page · web-llm" is
 * picked: web-llm's prebuilt models (mlc-ai/*-MLC on the Hugging Face hub; the list ships
 * with web-llm, and while the browser is offline only the cached ones can be picked), or
 * any MLC folder URL with its model library URL; the models web-llm keeps in Cache
 * Storage, each deletable. The choice is remembered with the form.
 */
import { h } from './dom.js';

/** What the web-llm engine loads. */
export interface WebLlmChoice {
  /** A prebuilt model's id, or 'custom'. */
  model: string;
  /** For 'custom': the MLC folder (web-llm reads `<url>/resolve/main/…`) and its library. */
  modelUrl: string;
  modelLibUrl: string;
}

export interface WebLlmModelEntry {
  id: string;
  modelUrl: string;
  modelLibUrl: string;
  /** VRAM web-llm states for it, MB. */
  vramMB?: number;
  /** The library computes in float16 (needs the adapter's shader-f16). */
  f16: boolean;
}

/** Supplied by the page's entry: web-llm's prebuilt list and its caches, loaded on first use. */
export interface WebLlmCatalog {
  /** True when web-llm can run here (a WebGPU adapter), or why not. */
  available: Promise<true | string>;
  prebuilt(): Promise<WebLlmModelEntry[]>;
  cached(models: WebLlmModelEntry[]): Promise<WebLlmModelEntry[]>;
  remove(model: WebLlmModelEntry): Promise<void>;
}

export const CUSTOM = 'custom';

export function defaultWebLlmChoice(): WebLlmChoice {
  return { model: CUSTOM, modelUrl: '', modelLibUrl: '' };
}

/** The model a choice names, or why it names none yet. */
export function resolveChoice(choice: WebLlmChoice, prebuilt: readonly WebLlmModelEntry[]): WebLlmModelEntry | string {
  if (choice.model !== CUSTOM) {
    return prebuilt.find((entry) => entry.id === choice.model) ?? `web-llm has no prebuilt model "${choice.model}"`;
  }
  if (choice.modelUrl.trim() === '' || choice.modelLibUrl.trim() === '') return 'Give the model folder’s URL and its model library’s URL.';
  try {
    const modelUrl = new URL(choice.modelUrl.trim(), document.baseURI).href;
    const modelLibUrl = new URL(choice.modelLibUrl.trim(), document.baseURI).href;
    const id = new URL(modelUrl).pathname.split('/').filter((part) => part !== '').at(-1) ?? 'custom-model';
    return { id, modelUrl, modelLibUrl, f16: /q\d+f16/.test(modelLibUrl) };
  } catch {
    return 'The model or library URL is not a URL.';
  }
}

export function createWebLlmPanel(
  container: HTMLElement,
  catalog: WebLlmCatalog,
  choice: WebLlmChoice,
  /** The choice changed: the engine must be loaded again. */
  onChange: () => void,
) {
  const select = h('select', { id: 'webllm-model' }) as HTMLSelectElement;
  const modelUrl = h('input', { id: 'webllm-model-url', type: 'url', placeholder: 'https://huggingface.co/mlc-ai/Qwen2.5-0.5B-Instruct-q4f32_1-MLC' }) as HTMLInputElement;
  const libUrl = h('input', { id: 'webllm-lib-url', type: 'url', placeholder: 'https://…/Qwen2-0.5B-Instruct-q4f32_1-ctx4k_cs1k-webgpu.wasm' }) as HTMLInputElement;
  const customBox = h('div', { class: 'webllm-custom' }, h('label', { for: 'webllm-model-url' }, 'Model URL'), modelUrl, h('label', { for: 'webllm-lib-url' }, 'Library URL'), libUrl);
  const cachedList = h('ul', { id: 'webllm-cached', class: 'webllm-cached' });
  const note = h('p', { class: 'webllm-note', id: 'webllm-note' });
  container.append(h('label', { for: 'webllm-model' }, 'web-llm model'), select, customBox, note, h('p', {}, 'Cached by web-llm:'), cachedList);
  modelUrl.value = choice.modelUrl;
  libUrl.value = choice.modelLibUrl;

  let prebuilt: WebLlmModelEntry[] = [];
  let cachedIds = new Set<string>();
  let listError: string | null = null;
  const render = () => {
    const offline = !navigator.onLine;
    select.replaceChildren(
      ...prebuilt.map((entry) => {
        const cached = cachedIds.has(entry.id);
        const label = `${entry.id}${entry.f16 ? ' (needs shader-f16)' : ''}${entry.vramMB ? ` · ${Math.round(entry.vramMB)} MB` : ''}${cached ? ' · cached' : ''}`;
        // Offline, a prebuilt model can load only from web-llm's cache.
        return h('option', { value: entry.id, disabled: offline && !cached }, offline && !cached ? `${label} (offline: not cached)` : label);
      }),
      h('option', { value: CUSTOM }, 'Custom model URL + library URL…'),
    );
    select.value = prebuilt.some((entry) => entry.id === choice.model) ? choice.model : CUSTOM;
    customBox.hidden = select.value !== CUSTOM;
    note.textContent = listError ?? (offline ? 'Offline: only the models cached by web-llm (below) and models served by this host can load.' : '');
  };
  window.addEventListener('online', render);
  window.addEventListener('offline', render);
  const update = () => {
    choice.model = select.value;
    choice.modelUrl = modelUrl.value;
    choice.modelLibUrl = libUrl.value;
    customBox.hidden = choice.model !== CUSTOM;
    onChange();
  };
  select.addEventListener('change', update);
  modelUrl.addEventListener('change', update);
  libUrl.addEventListener('change', update);

  async function refreshCached(): Promise<void> {
    const custom = resolveChoice({ ...choice, model: CUSTOM }, prebuilt);
    const known = typeof custom === 'string' ? prebuilt : [...prebuilt, custom];
    try {
      const cached = await catalog.cached(known);
      cachedIds = new Set(cached.map((entry) => entry.id));
      render();
      cachedList.replaceChildren(
        ...(cached.length === 0
          ? [h('li', {}, 'nothing yet')]
          : cached.map((entry) => {
              const remove = h('button', { type: 'button', class: 'link' }, 'Delete') as HTMLButtonElement;
              remove.addEventListener('click', async () => {
                remove.disabled = true;
                await catalog.remove(entry);
                await refreshCached();
              });
              return h('li', {}, `${entry.id} `, remove);
            })),
      );
    } catch (error) {
      cachedList.replaceChildren(h('li', {}, `The cache cannot be read: ${(error as Error).message}`));
    }
  }

  render();
  let opened: Promise<void> | undefined;
  /** Loads web-llm's prebuilt list (it ships with web-llm) and the cache list, once. */
  const open = (): Promise<void> =>
    (opened ??= (async () => {
      try {
        prebuilt = await catalog.prebuilt();
      } catch (error) {
        listError = `web-llm’s model list could not be loaded: ${(error as Error).message}`;
      }
      render();
      await refreshCached();
    })());
  return {
    open,
    /** The prebuilt list is known (a saved prebuilt choice can be resolved against it). */
    ready: open,
    models: () => prebuilt,
    refreshCached,
  };
}
