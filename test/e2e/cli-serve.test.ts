/**
 * `npm start -- FLAGS` (= `edge-llm serve FLAGS`) as a user runs it: flags win over the
 * environment and the config file, the start-up report says where each setting came from, a
 * bad command line stops at once, the port is bound before the model loads (a clash is
 * refused before any loading), and the last line names the API and the playground.
 */
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { spawnFailingServer, spawnServer } from './spawn-server.js';

/** A port nothing listens on now (the OS's pick, released). */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('edge-llm serve flags (npm start -- ...)', () => {
  it('serves on --port over PORT and a config file, says where each setting came from, and ends with the URLs', async () => {
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), 'edge-llm-cli-'));
    const config = join(dir, 'config.json');
    writeFileSync(config, JSON.stringify({ port: 1, maxIterTimes: 64, servedModelName: 'from-file' }));
    const server = await spawnServer({ PORT: '2', SERVED_MODEL_NAME: 'from-env' }, ['--config', config, '--port', String(port), '--api-key', 'k1']);
    try {
      expect(server.url).toBe(`http://127.0.0.1:${port}`);
      const output = server.output();
      expect(output).toContain(`port = ${port}  (--port)`);
      expect(output).toContain('servedModelName = from-env  (env SERVED_MODEL_NAME)');
      expect(output).toContain(`maxIterTimes = 64  (config file ${config})`);
      expect(output).toContain('apiKey = (1 set)  (--api-key)');
      expect(output).not.toContain('k1');
      // Bound first, then the load's stages, then the URLs on the last line.
      const bound = output.indexOf(`Bound http://127.0.0.1:${port}`);
      const reading = output.indexOf('Loading: reading the model files');
      const session = output.indexOf('Loading: creating the onnxruntime session');
      const listening = output.indexOf(`Listening on http://127.0.0.1:${port} (API http://127.0.0.1:${port}/v1, playground http://127.0.0.1:${port}/)`);
      expect(bound).toBeGreaterThanOrEqual(0);
      expect(reading).toBeGreaterThan(bound);
      expect(session).toBeGreaterThan(reading);
      expect(listening).toBeGreaterThan(session);
      // --api-key protects the API.
      expect((await fetch(`${server.url}/v1/models`)).status).toBe(401);
      const models = await (await fetch(`${server.url}/v1/models`, { headers: { authorization: 'Bearer k1' } })).json();
      expect(models.data[0].id).toBe('from-env');
    } finally {
      await server.stop();
    }
  });

  it.concurrent('stops at once with code 2 on an unknown flag or a bad value, naming it and the nearest flag', async () => {
    const [unknown, bad] = await Promise.all([spawnFailingServer({}, ['--prot', '8081']), spawnFailingServer({}, ['--max-num-seqs', 'many'])]);
    expect(unknown.code).toBe(2);
    expect(unknown.output).toContain('edge-llm: error: unknown flag --prot; did you mean --port?');
    expect(bad.code).toBe(2);
    expect(bad.output).toContain('edge-llm: error: --max-num-seqs must be an integer >= 1, got "many"');
    for (const run of [unknown, bad]) expect(run.output).not.toMatch(/Bound|Loading/);
  });

  it.concurrent('refuses a port in use before loading the model', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as AddressInfo;
    try {
      const { code, output } = await spawnFailingServer({}, ['--port', String(port)]);
      expect(code).toBe(1);
      expect(output).toContain(`Cannot listen on 127.0.0.1:${port}: the port is in use by another program (choose another with --port)`);
      expect(output).not.toMatch(/Loading:/);
    } finally {
      taken.close();
    }
  });

  it('renders chat with the template of --chat-template (a file) instead of the model\'s', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'edge-llm-template-'));
    const template = join(dir, 'plain.jinja');
    writeFileSync(template, '{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}{% if add_generation_prompt %}[assistant] {% endif %}');
    const server = await spawnServer({}, ['--chat-template', template]);
    try {
      const post = (path: string, body: unknown) =>
        fetch(`${server.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }).then((r) => r.json());
      const { tokens } = await post('/tokenize', { model: 'stories260k', messages: [{ role: 'user', content: 'Hi' }] });
      expect((await post('/detokenize', { model: 'stories260k', tokens })).prompt).toBe('[user] Hi\n[assistant] ');
    } finally {
      await server.stop();
    }
    const missing = await spawnFailingServer({}, ['--chat-template', join(dir, 'none.jinja')]);
    expect(missing.code).toBe(1);
    expect(missing.output).toContain('none.jinja" cannot be read: no such file (and it is not a Jinja template).');
  });

  it.concurrent('refuses --enable-auto-tool-choice without a tool-call parser, as vLLM does', async () => {
    const { code, output } = await spawnFailingServer({}, ['--enable-auto-tool-choice']);
    expect(code).toBe(1);
    expect(output).toContain('--enable-auto-tool-choice needs --tool-call-parser');
  });
});
