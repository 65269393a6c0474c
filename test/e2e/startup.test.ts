import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawnFailingServer, spawnServer } from './spawn-server.js';

describe('npm start (dist/node/server.js)', () => {
  it('reads the CONFIG file, lets the environment override it, and stops cleanly on SIGTERM', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'edge-llm-config-'));
    const config = join(dir, 'config.json');
    writeFileSync(config, JSON.stringify({ port: 1, servedModelName: 'from-file', fullTextEnabled: true }));
    const server = await spawnServer({ CONFIG: config });
    try {
      // PORT=0 from the environment won over the file's port 1.
      const models = await (await fetch(`${server.url}/v1/models`)).json();
      expect(models.data[0].id).toBe('from-file');
      const response = await fetch(`${server.url}/generate`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: 'Once upon a time', temperature: 0, max_tokens: 2, stream: true }),
      });
      // fullTextEnabled from the file: the second event repeats the first.
      expect(await response.text()).toBe('data: {"text":[","]}\n\ndata: {"text":[", there"]}\n\n');
    } finally {
      expect(await server.stop('SIGTERM')).toBe(0);
    }
    expect(server.output()).toMatch(/Server stopped/);
  });

  it.concurrent('exits with 1 and a clear message on an invalid setting', async () => {
    const { code, output } = await spawnFailingServer({ PORT: 'eighty' });
    expect(code).toBe(1);
    expect(output).toMatch(/Invalid server configuration/);
    expect(output).toMatch(/port/);
    expect(output).not.toMatch(/\n\s+at /);
  });

  it.concurrent('exits with 1 when the CONFIG file is missing or not JSON', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'edge-llm-config-'));
    writeFileSync(join(dir, 'bad.json'), '{ port: 8080 }');
    const [missing, bad] = await Promise.all([
      spawnFailingServer({ CONFIG: '/nonexistent/config.json' }),
      spawnFailingServer({ CONFIG: join(dir, 'bad.json') }),
    ]);
    expect(missing.code).toBe(1);
    expect(missing.output).toMatch(/Cannot read the configuration file "\/nonexistent\/config.json"/);
    expect(bad.code).toBe(1);
    expect(bad.output).toMatch(/is not valid JSON/);
  });

  it.concurrent('exits with 1 when the model directory cannot be loaded', async () => {
    const { code, output } = await spawnFailingServer({ MODEL_DIR: '/nonexistent/model' });
    expect(code).toBe(1);
    expect(output).toMatch(/The model "\/nonexistent\/model" does not exist/);
    // Refused before the port is bound.
    expect(output).not.toMatch(/Bound http/);
    const empty = mkdtempSync(join(tmpdir(), 'edge-llm-empty-model-'));
    const loadFailure = await spawnFailingServer({ MODEL_DIR: empty });
    expect(loadFailure.code).toBe(1);
    expect(loadFailure.output).toMatch(/Cannot load the model/);
  });
});
