/**
 * What `npm start` loads: the Node server runs the model on onnxruntime-node, so
 * onnxruntime-web (and its WebAssembly) must never load there, XGrammar (its
 * WebAssembly and vocabulary tables, ~20 MiB) only once a request asks for structured
 * output, and the pure-JS image codecs (jpeg-js, fast-png with fflate; ~3 MiB) only with
 * the first image; mp4box never (ffmpeg decodes video under Node). Checked on the running
 * server's module loads, so an import re-added anywhere (a static import in our code or in
 * a dependency) fails here. The log covers the worker threads too: XGrammar loads on the
 * guide threads, never on the main one.
 */
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { smallPng, twoToneJpeg } from '../media/helpers/fixtures.js';
import { spawnServer } from './spawn-server.js';

const HOOK = fileURLToPath(new URL('./fixtures/module-log.mjs', import.meta.url));

async function complete(url: string, extra: Record<string, unknown> = {}): Promise<{ text: string }> {
  const response = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model: 'stories260k', prompt: 'Once upon a time', max_tokens: 4, temperature: 0, ...extra }),
  });
  const body = await response.text();
  expect(response.status, body).toBe(200);
  return (JSON.parse(body) as { choices: Array<{ text: string }> }).choices[0];
}

function startLogged() {
  const log = join(mkdtempSync(join(tmpdir(), 'edge-llm-modules-')), 'modules.txt');
  const loaded = () => readFileSync(log, 'utf8').split('\n').filter((line) => line !== '');
  const fromPackage = (name: string) => loaded().filter((url) => url.includes(`/node_modules/${name}/`));
  return { fromPackage, server: spawnServer({ NODE_OPTIONS: `--import=${HOOK}`, LOADED_MODULES_FILE: log }) };
}

/** A /generate request with an image part: the text-only model refuses it once the image is decoded. */
async function sendImage(url: string, dataUrl: string): Promise<string> {
  const response = await fetch(`${url}/generate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: [{ type: 'text', text: 'Describe' }, { type: 'image_url', image_url: dataUrl }], max_tokens: 2 }),
  });
  const body = await response.text();
  expect(response.status, body).toBe(400);
  return body;
}

describe('modules the Node server loads', () => {
  it('never loads onnxruntime-web, and XGrammar only with the first guided request', async () => {
    const log = join(mkdtempSync(join(tmpdir(), 'edge-llm-modules-')), 'modules.txt');
    const loaded = () => readFileSync(log, 'utf8').split('\n').filter((line) => line !== '');
    const fromPackage = (name: string) => loaded().filter((url) => url.includes(`/node_modules/${name}/`));
    const server = await spawnServer({ NODE_OPTIONS: `--import=${HOOK}`, LOADED_MODULES_FILE: log });
    try {
      await complete(server.url);
      // The log sees package entries: the runtime that does run the model is in it.
      expect(fromPackage('onnxruntime-node').length).toBeGreaterThan(0);
      expect(fromPackage('onnxruntime-web')).toEqual([]);
      expect(fromPackage('@mlc-ai/web-xgrammar')).toEqual([]);

      const guided = await complete(server.url, { guided_choice: ['yes', 'no'] });
      expect(['yes', 'no']).toContain(guided.text);
      expect(fromPackage('@mlc-ai/web-xgrammar').length).toBeGreaterThan(0);
      expect(fromPackage('onnxruntime-web')).toEqual([]);
    } finally {
      await server.stop();
    }
  });

  it('never loads an image codec for a text-only model: its image parts are refused from their headers; mp4box never', async () => {
    const { fromPackage, server: starting } = startLogged();
    const server = await starting;
    try {
      await complete(server.url);
      const codecs = ['fast-png', 'fflate', 'jpeg-js', 'sharp', 'mp4box'];
      for (const name of codecs) expect(fromPackage(name), name).toEqual([]);

      const png = await sendImage(server.url, `data:image/png;base64,${Buffer.from(smallPng()).toString('base64')}`);
      expect(png).toMatch(/this model accepts text only; the image was fetched and its header checked \(not decoded\)/);
      const jpeg = await sendImage(server.url, `data:image/jpeg;base64,${Buffer.from(twoToneJpeg(16, 8, [200, 0, 0], [0, 0, 200])).toString('base64')}`);
      expect(jpeg).toMatch(/this model accepts text only; the image was fetched and its header checked \(not decoded\)/);
      const noHeader = await sendImage(server.url, `data:image/png;base64,${Buffer.from(smallPng().subarray(0, 20)).toString('base64')}`);
      expect(noHeader).toMatch(/"code":400/);
      for (const name of codecs) expect(fromPackage(name), name).toEqual([]);
    } finally {
      await server.stop();
    }
  });
});
