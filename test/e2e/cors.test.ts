/**
 * CORS from a real browser (Debian's Chromium, driven by playwright-core): a page served
 * from another origin calls `npm start`'s API with fetch. A JSON POST with an
 * Authorization header is not a "simple" request, so Chromium sends a preflight OPTIONS
 * first and only sends the request if the server's answer allows it.
 */
import { existsSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { servedUrl } from './spawn-server.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const CHROMIUM_ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--no-first-run'];

const open = servedUrl();
// Allows only an origin the page does not have.
const closed = servedUrl({ CORS_ALLOWED_ORIGINS: 'https://only.example' });

let pageServer: Server;
let pageOrigin: string;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`Chromium is missing at ${CHROMIUM}: apt-get install -y chromium (or set CHROMIUM_PATH).`);
  pageServer = createServer((_request, response) => {
    response.writeHead(200, { 'content-type': 'text/html' });
    response.end('<!doctype html><title>another origin</title><p>client page</p>');
  });
  await new Promise<void>((resolve) => pageServer.listen(0, '127.0.0.1', resolve));
  // "localhost" and 127.0.0.1 on other ports: a different origin from the API in every respect.
  pageOrigin = `http://localhost:${(pageServer.address() as AddressInfo).port}`;
  browser = await chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS });
});

afterAll(async () => {
  await browser?.close();
  await new Promise((resolve) => pageServer?.close(resolve));
});

async function openPage(): Promise<Page> {
  const page = await (await browser.newContext()).newPage();
  await page.goto(pageOrigin);
  return page;
}

/** fetch() in the page: the JSON body, or the browser's error message when CORS blocked it. */
function callFromPage(page: Page, url: string, body: unknown): Promise<{ status: number; json: any } | { blocked: string }> {
  return page.evaluate(
    async ({ url, body }) => {
      try {
        const response = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: 'Bearer page-key' },
          body: JSON.stringify(body),
        });
        return { status: response.status, json: await response.json() };
      } catch (error) {
        return { blocked: String(error) };
      }
    },
    { url, body },
  );
}

const chat = { model: 'stories260k', messages: [{ role: 'user', content: 'Once upon a time' }], temperature: 0, max_tokens: 8 };

describe('CORS from a browser page on another origin', () => {
  it('by default (any origin): the chat answer and an error body are readable in the page', async () => {
    const page = await openPage();
    const answer = await callFromPage(page, `${open.url}/v1/chat/completions`, chat);
    expect(answer).toMatchObject({ status: 200, json: { object: 'chat.completion' } });
    expect((answer as { json: any }).json.choices[0].message.content.length).toBeGreaterThan(0);
    const refused = await callFromPage(page, `${open.url}/v1/chat/completions`, { ...chat, top_p: 0 });
    expect(refused).toMatchObject({ status: 400, json: { param: 'top_p', error: { param: 'top_p' } } });

    // A stream is read chunk by chunk in the page.
    const streamed = await page.evaluate(async (url) => {
      const response = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: 'Bearer page-key' },
        body: JSON.stringify({ model: 'stories260k', prompt: 'Once upon a time', max_tokens: 8, temperature: 0, stream: true }),
      });
      return await response.text();
    }, `${open.url}/v1/completions`);
    expect(streamed.trimEnd().endsWith('data: [DONE]')).toBe(true);
  });

  it('with corsAllowedOrigins set to another origin: the browser blocks the call after the preflight', async () => {
    const page = await openPage();
    const result = await callFromPage(page, `${closed.url}/v1/chat/completions`, chat);
    expect(result).toEqual({ blocked: expect.stringContaining('Failed to fetch') });
    // The server itself is up and answers a same-origin (non-browser) client.
    const direct = await fetch(`${closed.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(chat) });
    expect(direct.status).toBe(200);
  });
});
