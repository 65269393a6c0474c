/**
 * The playground page's script (bundled by scripts/build-playground.ts into
 * dist/playground/playground.js). It starts the UI of public/src and hands it the
 * in-page engine loader: the engine, Hono and onnxruntime-web are imported only when a
 * visitor first picks an in-page engine, so the page itself loads fast.
 */
import { startPlayground } from '../../public/src/playground.js';
import type { InPageLoader } from '../../public/src/targets.js';
import { probeWebGpu } from './browser-ort.js';

/**
 * The model the in-page engine loads: the server's (playground/model/), or the folder a
 * page URL names, e.g. ?model=https://host/org/model/resolve/main/&dtype=q4f16 (the
 * folder must allow cross-origin reads; the dtype / modelFile settings as in config.json).
 */
function inPageModel(servedModelName: string): { baseUrl: string; name: string; config: Record<string, unknown> } {
  const query = new URLSearchParams(location.search);
  const config: Record<string, unknown> = {};
  const dtype = query.get('dtype');
  const modelFile = query.get('modelFile');
  if (dtype) config.dtype = dtype;
  if (modelFile) config.modelFile = modelFile;
  const model = query.get('model');
  if (!model) return { baseUrl: new URL('playground/model/', document.baseURI).href, name: servedModelName, config };
  const baseUrl = new URL(model.endsWith('/') ? model : `${model}/`, document.baseURI).href;
  // Hugging Face URLs end in resolve/<revision>/: name the model by its repository.
  const parts = new URL(baseUrl).pathname.split('/').filter((part) => part !== '');
  const resolveAt = parts.lastIndexOf('resolve');
  const name = (resolveAt > 0 ? parts[resolveAt - 1] : parts.at(-1)) ?? servedModelName;
  return { baseUrl, name, config };
}

const loadInPage: InPageLoader = async (backend, { servedModelName, onStatus }) => {
  onStatus(`loading onnxruntime-web (${backend === 'webgpu' ? 'WebGPU' : 'WebAssembly'})…`);
  const [{ createBrowserApp }, { loadBrowserOrt }] = await Promise.all([import('./browser-engine.js'), import('./browser-ort.js')]);
  const ort = await loadBrowserOrt(backend, new URL('playground/ort/', document.baseURI).href);
  onStatus('downloading the model…');
  const model = inPageModel(servedModelName);
  const { app } = await createBrowserApp({
    ort,
    backend,
    modelBaseUrl: model.baseUrl,
    servedModelName: model.name,
    config: model.config,
    onProgress: (bytes) => onStatus(`downloading the model… ${(bytes / 1024 / 1024).toFixed(1)} MB`),
  });
  return (request) => app.fetch(request);
};

startPlayground({
  loadInPage,
  webGpuAvailable: probeWebGpu(),
  storage: (() => {
    try {
      return window.localStorage;
    } catch {
      return undefined; // Storage disabled: nothing is remembered.
    }
  })(),
});
