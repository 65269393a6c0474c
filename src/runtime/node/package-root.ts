import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The folder of this package's package.json, found by walking up from a module's URL. The
 * same code runs from src/runtime/node/ (tsx, tests), from dist/node/ (the bundle `npm start`
 * runs) and from an installed package, each at another depth below the root.
 */
export function packageRoot(moduleUrl: string): string {
  let dir = dirname(fileURLToPath(moduleUrl));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest) && (JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'edge-llm') return dir;
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no edge-llm package.json above ${fileURLToPath(moduleUrl)}`);
    dir = parent;
  }
}
