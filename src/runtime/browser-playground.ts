/**
 * The playground page's script (bundled by scripts/build-playground.ts into
 * dist/playground/playground.js). It starts the UI of public/src and hands it the
 * in-page engine loader: the engine, Hono and onnxruntime-web are imported only when a
 * visitor first picks an in-page engine, so the page itself loads fast.
 */
import { startPlayground } from '../../public/src/playground.js';
import type { InPageLoader } from '../../public/src/targets.js';
import { probeWebGpu } from './browser-ort.js';

const loadInPage: InPageLoader = async (backend, { servedModelName, onStatus }) => {
  onStatus(`loading onnxruntime-web (${backend === 'webgpu' ? 'WebGPU' : 'WebAssembly'})…`);
  const [{ createBrowserApp }, { loadBrowserOrt }] = await Promise.all([import('./browser-engine.js'), import('./browser-ort.js')]);
  const ort = await loadBrowserOrt(backend, new URL('playground/ort/', document.baseURI).href);
  onStatus('downloading the model…');
  const { app } = await createBrowserApp({
    ort,
    backend,
    modelBaseUrl: new URL('playground/model/', document.baseURI).href,
    servedModelName,
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
