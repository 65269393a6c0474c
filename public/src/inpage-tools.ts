/**
 * Below the page: what the in-page engine keeps in the browser's cache (with a button to
 * clear it), and a benchmark of the picked in-page engine that anyone can run on their
 * own device.
 */
import { byId } from './dom.js';
import { formatBytes } from './downloads.js';
import type { TargetId } from './store.js';
import { TARGET_LABELS, type InPageBenchmark } from './targets.js';

export interface InPageToolsOptions {
  benchmark?: InPageBenchmark;
  cache?: { size(): Promise<{ files: number; bytes: number; page?: boolean }>; clear(): Promise<void> };
}

const BENCHMARK = { tokens: 64, runs: 3 };

export function createInPageTools(options: InPageToolsOptions, target: () => TargetId, isReady: (target: TargetId) => boolean) {
  const cacheStatus = byId('cache-status');
  const clearButton = byId<HTMLButtonElement>('clear-cache');
  const benchmarkButton = byId<HTMLButtonElement>('benchmark');
  const benchmarkResult = byId('benchmark-result');
  let benchmarking = false;

  async function refreshCache(): Promise<void> {
    if (!options.cache) {
      cacheStatus.textContent = 'This browser keeps no files for offline use (no Cache Storage).';
      clearButton.hidden = true;
      return;
    }
    try {
      const { files, bytes, page } = await options.cache.size();
      const engineFiles = files === 0 ? 'Nothing cached for offline use yet.' : `Cached for offline use: ${formatBytes(bytes)} in ${files} files.`;
      // The page itself (service worker): a reload works without the server.
      cacheStatus.textContent = page ? `${engineFiles} The page reloads without its server.` : engineFiles;
      clearButton.disabled = files === 0 && !page;
    } catch (error) {
      cacheStatus.textContent = `The cache cannot be read: ${(error as Error).message}`;
    }
  }

  function refreshBenchmark(): void {
    const picked = target();
    const usable = picked !== 'server' && picked !== 'webllm' && isReady(picked) && options.benchmark !== undefined;
    benchmarkButton.disabled = benchmarking || !usable;
    benchmarkButton.title = usable ? `Decode ${BENCHMARK.runs} × ${BENCHMARK.tokens} tokens on ${TARGET_LABELS[picked]}` : 'Pick an in-page engine first';
  }

  clearButton.addEventListener('click', async () => {
    await options.cache?.clear();
    await refreshCache();
  });

  benchmarkButton.addEventListener('click', async () => {
    const picked = target();
    if (picked === 'server' || picked === 'webllm' || !options.benchmark) return;
    benchmarking = true;
    refreshBenchmark();
    benchmarkResult.textContent = `Benchmarking ${TARGET_LABELS[picked]}…`;
    try {
      const result = await options.benchmark(picked, {
        ...BENCHMARK,
        onRun: (run, { stepsPerSecond }) => {
          benchmarkResult.textContent = `Benchmarking ${TARGET_LABELS[picked]}… run ${run + 1} of ${BENCHMARK.runs}: ${stepsPerSecond.toFixed(1)} tokens/s`;
        },
      });
      benchmarkResult.textContent =
        `${TARGET_LABELS[picked]}: ${result.stepsPerSecond.toFixed(1)} tokens/s decoding, first token in ${result.prefillMs.toFixed(0)} ms ` +
        `(greedy, one sequence, median of ${BENCHMARK.runs} runs of ${result.tokens} tokens).`;
    } catch (error) {
      benchmarkResult.textContent = `The benchmark failed: ${(error as Error).message}`;
    } finally {
      benchmarking = false;
      refreshBenchmark();
    }
  });

  return {
    async refresh(): Promise<void> {
      refreshBenchmark();
      await refreshCache();
    },
  };
}
