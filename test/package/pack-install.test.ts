/**
 * The package as a user installs it: `npm pack`, installed into an empty folder with nothing
 * but the npm registry (here its local cache: `--prefer-offline` reuses what the repo's own
 * install fetched), then `npx edge-llm --help`, an unknown flag, `npx edge-llm serve --port P
 * --api-key K` on the embedded model, and the README's embedding example. onnxruntime-node's
 * install script would fetch GPU libraries from outside the registry: the install says
 * ONNXRUNTIME_NODE_INSTALL=skip, as the README tells users to (the CPU package needs nothing
 * more). dist/node is built by the test setup (test/e2e/build-server.global.ts), so the pack
 * skips the prepack build (the playground's bundle, which this test does not use).
 */
import { execFile, spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../docs/doc-blocks.js';

const run = promisify(execFile);
const INSTALL_ENV = { ...process.env, ONNXRUNTIME_NODE_INSTALL: 'skip', npm_config_audit: 'false', npm_config_fund: 'false', npm_config_update_notifier: 'false' };

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

describe('the npm package', () => {
  it('packs, installs into an empty folder, and serves the embedded model with npx edge-llm', { timeout: 600_000 }, async () => {
    const packDir = mkdtempSync(join(tmpdir(), 'edge-llm-pack-'));
    await run('npm', ['pack', '--ignore-scripts', '--pack-destination', packDir], { cwd: REPO_ROOT, env: INSTALL_ENV });
    const tarball = join(packDir, readdirSync(packDir).find((name) => name.endsWith('.tgz'))!);
    const home = mkdtempSync(join(tmpdir(), 'edge-llm-user-'));
    writeFileSync(join(home, 'package.json'), JSON.stringify({ name: 'my-llm', private: true }));
    await run('npm', ['install', '--prefer-offline', tarball], { cwd: home, env: INSTALL_ENV, maxBuffer: 16 * 1024 * 1024 });

    const help = await run('npx', ['edge-llm', '--help'], { cwd: home });
    expect(help.stdout).toContain('Usage:');
    for (const flag of ['--port', '--api-key', '--max-model-len', '--dtype', '--served-model-name', '--lora-modules', '--tool-call-parser', '--data-parallel-size']) {
      expect(help.stdout).toContain(flag);
    }
    const unknown = await run('npx', ['edge-llm', 'serve', '--prot', '1'], { cwd: home }).then(
      () => null,
      (error: { code: number; stderr: string }) => error,
    );
    expect(unknown?.code).toBe(2);
    expect(unknown?.stderr).toContain('unknown flag --prot; did you mean --port?');

    const port = await freePort();
    const child = spawn('npx', ['edge-llm', 'serve', '--port', String(port), '--api-key', 'k'], { cwd: home, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let output = '';
    child.stdout.on('data', (data: Buffer) => (output += data));
    child.stderr.on('data', (data: Buffer) => (output += data));
    try {
      for (let waited = 0; !output.includes('Listening on') && waited < 60_000 && child.exitCode === null; waited += 200) await new Promise((r) => setTimeout(r, 200));
      expect(output).toContain(`Listening on http://127.0.0.1:${port} (API http://127.0.0.1:${port}/v1, playground http://127.0.0.1:${port}/)`);
      const url = `http://127.0.0.1:${port}/v1/completions`;
      const body = JSON.stringify({ model: 'stories260k', prompt: 'Once upon a time', max_tokens: 8, temperature: 0 });
      expect((await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body })).status).toBe(401);
      const served = await (await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer k' }, body })).json();
      expect(served.choices[0].text.length).toBeGreaterThan(0);

      // The README's embedding example gives the served text.
      copyFileSync(join(REPO_ROOT, 'examples/embed.mjs'), join(home, 'embed.mjs'));
      const embedded = await run('node', ['embed.mjs'], { cwd: home });
      expect(embedded.stdout.trim()).toBe(served.choices[0].text.trim());
    } finally {
      // npx runs the server as its child: stop the whole group.
      if (child.exitCode === null) process.kill(-child.pid!, 'SIGTERM');
    }
  });
});
