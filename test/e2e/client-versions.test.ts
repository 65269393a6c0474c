/**
 * Which client majors this run's client tests (the other files in this folder) resolve: the
 * repository's pins (package.json, Node 20), or, with EDGE_LLM_CLIENTS=next (.ci/run's Node 24
 * pass, after `npm ci --prefix test/e2e`), the current majors test/e2e/package.json pins,
 * which this folder's node_modules holds ahead of the root's. Without this a missing install
 * would quietly test the old clients twice.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const HERE = dirname(fileURLToPath(import.meta.url));
const CLIENTS = ['openai', 'ai', '@ai-sdk/openai-compatible', '@langchain/openai', '@langchain/core', '@anthropic-ai/sdk'] as const;

const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8')) as Record<string, Record<string, string>>;

/** The version Node's lookup from this folder finds: the nearest node_modules/<name> upwards. */
function resolvedVersion(name: string): string | undefined {
  for (let dir = HERE; ; dir = dirname(dir)) {
    const manifest = join(dir, 'node_modules', name, 'package.json');
    if (existsSync(manifest)) return readJson(manifest).version as unknown as string;
    if (dirname(dir) === dir) return undefined;
  }
}

const next = process.env.EDGE_LLM_CLIENTS === 'next';

describe(`client libraries under test (${next ? 'current majors' : "the repository's pins"}, Node ${process.versions.node})`, () => {
  it('are the versions this pass is meant to test', () => {
    const pins = next ? readJson(join(HERE, 'package.json')).dependencies : readJson(join(HERE, '..', '..', 'package.json')).devDependencies;
    const resolved = Object.fromEntries(CLIENTS.map((name) => [name, resolvedVersion(name)]));
    expect(resolved).toEqual(Object.fromEntries(CLIENTS.map((name) => [name, pins[name]])));
  });
});
