import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { XGrammarRuntime } from './xgrammar-api.js';
import { startXGrammar } from './xgrammar-start.js';

/**
 * Starts XGrammar under Node. Its Emscripten glue, running as an ES module here, expects
 * CommonJS's `require` and `__filename`, and binds its stdout printer to console.log when it
 * starts; for that window only, this provides the two globals, sends console.log to stderr
 * (XGrammar's messages must not mix with a server's stdout), and watches
 * WebAssembly.instantiate to learn XGrammar's memory. Everything is restored afterwards.
 */
export async function loadXGrammarInNode(instance = 0): Promise<XGrammarRuntime> {
  const g = globalThis as Record<string, unknown>;
  const added: string[] = [];
  if (!('require' in g)) {
    g.require = createRequire(import.meta.url);
    added.push('require');
  }
  if (!('__filename' in g)) {
    g.__filename = fileURLToPath(import.meta.url);
    added.push('__filename');
  }
  const log = console.log;
  console.log = (...args: unknown[]) => console.error(...args);
  try {
    // After a trap, a query string makes Node evaluate the package again: a new WebAssembly instance.
    const importModule =
      instance === 0
        ? undefined
        : () => import(`${pathToFileURL(createRequire(import.meta.url).resolve('@mlc-ai/web-xgrammar')).href}?instance=${instance}`);
    return await startXGrammar(importModule);
  } finally {
    console.log = log;
    for (const name of added) delete g[name];
  }
}
