/**
 * The playground in a real browser (Debian's Chromium, driven by playwright-core): the
 * page served by the real app on a free port, a streamed chat from the server, the same
 * seeded request answered by the engine running inside the page, and the inline errors.
 */
import { statSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { REPO_ROOT } from '../helpers/model.js';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  askServer as askServerAt,
  CHROMIUM_MISSING,
  closeContexts,
  expectStreamed,
  finishedText,
  launchChromium,
  openPlayground as openPlaygroundAt,
  OUTPUT_DIR,
  seenStatuses,
  seenTexts,
  setParam,
  shownRequestBody,
  startPlaygroundServer,
  WAIT,
  watchOutput,
  watchStatus,
  type PlaygroundServer,
  BROWSER_TEST_TIMEOUT,
} from './playground-harness.js';

let server: PlaygroundServer;
let baseUrl: string;
let browser: Browser;

// A test of its own, so a missing browser shows up as a failure in every summary, not as skips.
it('has Chromium to run the playground in', () => {
  if (CHROMIUM_MISSING) throw new Error(CHROMIUM_MISSING);
});

const openPlayground = (viewport?: { width: number; height: number }) => openPlaygroundAt(browser, baseUrl, viewport);
const askServer = (path: string, body: Record<string, unknown>) => askServerAt(baseUrl, path, body);

describe('playground page', { timeout: BROWSER_TEST_TIMEOUT }, () => {
  beforeAll(async () => {
    server = await startPlaygroundServer('playground');
    baseUrl = server.baseUrl;
    browser = await launchChromium();
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });

  afterEach(closeContexts);

  it('streams a chat completion from the server token by token, with metrics and finish reason', async () => {
    const { page, errors } = await openPlayground();
    await expect.poll(() => page.getByRole('tab', { name: 'Chat' }).getAttribute('aria-selected'), WAIT).toBe('true');
    await setParam(page, 'max_tokens', '300');
    await page.getByLabel('ignore_eos').check();
    await setParam(page, 'temperature', '0.8');
    await setParam(page, 'seed', '7');

    await watchOutput(page);
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('.choice .badge.length').waitFor();

    const final = (await page.locator('.choice .output').textContent()) ?? '';
    expectStreamed(await seenTexts(page), final);

    await expect.poll(() => page.locator('#metric-finish').textContent(), WAIT).toBe('length');
    expect(await page.locator('#metric-status').textContent()).toBe('200');
    expect(await page.locator('#metric-tokens').textContent()).toBe('300');
    expect(await page.locator('#metric-ttft').textContent()).toMatch(/^\d+ ms$|^\d+\.\d\d s$/);
    expect(Number(await page.locator('#metric-rate').textContent())).toBeGreaterThan(0);

    // What the page shows is exactly what the API answers for the request the page shows.
    const body = await shownRequestBody(page);
    expect(body).toMatchObject({ max_tokens: 300, ignore_eos: true, temperature: 0.8, seed: 7, stream: true });
    const direct = await askServer('/v1/chat/completions', body);
    expect(direct.status).toBe(200);
    expect(direct.json.choices[0].message.content).toBe(final);
    // The raw response is the SSE stream as received.
    await page.getByRole('tab', { name: 'Raw response' }).click();
    expect(await page.locator('#inspect-response-text').textContent()).toMatch(/^HTTP 200[\s\S]*data: \{[\s\S]*data: \[DONE\]/);
    await page.getByRole('tab', { name: 'curl' }).click();

    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: `${OUTPUT_DIR}/playground.png` });

    // The reply can join the conversation for the next turn.
    await page.getByRole('button', { name: 'Add the reply to the conversation' }).click();
    expect(await page.getByLabel('Role of message 2').inputValue()).toBe('assistant');
    expect(await page.getByLabel('Message 2 (assistant)').inputValue()).toBe(final);

    // Readable on a phone: one column, nothing wider than the screen.
    await page.setViewportSize({ width: 390, height: 844 });
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(390);
    await page.screenshot({ path: `${OUTPUT_DIR}/playground-phone.png`, fullPage: true });
    expect(errors).toEqual([]);
  });

  it('runs the same seeded request inside the page (onnxruntime-web WASM) with the server’s text, no server involved', async () => {
    const { page, errors } = await openPlayground();
    await page.getByRole('tab', { name: 'Completions' }).click();
    await page.getByLabel('Prompt', { exact: true }).fill('Once upon a time, there was a little');
    await setParam(page, 'max_tokens', '48');
    await setParam(page, 'temperature', '0.9');
    await setParam(page, 'top_k', '40');
    await setParam(page, 'seed', '1234');

    await page.getByRole('button', { name: 'Send' }).click();
    const fromServer = await finishedText(page);
    const body = await shownRequestBody(page);
    const direct = await askServer('/v1/completions', body);
    expect(direct.json.choices[0].text).toBe(fromServer);

    const requests: string[] = [];
    page.on('request', (request) => requests.push(`${request.method()} ${request.url()}`));
    await watchStatus(page);
    await page.getByText('In-page · WASM').click();
    await page.keyboard.press('Control+Enter');
    await expect.poll(() => page.locator('#engine-status').textContent(), WAIT).toContain('running in this page');
    const inPage = await finishedText(page);

    expect(inPage.length).toBeGreaterThan(20);
    expect(inPage).toBe(fromServer);
    expect(await shownRequestBody(page)).toEqual(body);
    // The page fetched the runtime and the model from this server, and sent it no API request.
    expect(requests.some((r) => r.endsWith('/playground/ort/ort-wasm-simd-threaded.wasm'))).toBe(true);
    expect(requests.some((r) => r.endsWith('/playground/model/onnx/model.onnx'))).toBe(true);
    expect(requests.filter((r) => r.startsWith('POST'))).toEqual([]);
    expect(requests.filter((r) => !r.includes(` ${baseUrl}`))).toEqual([]);
    // Download progress, per file as bytes of total and percent, up to 100%: the .wasm and the weights.
    const statuses = await seenStatuses(page);
    const wasmMb = (statSync(`${REPO_ROOT}node_modules/onnxruntime-web/dist/ort-wasm-simd-threaded.wasm`).size / 1024 / 1024).toFixed(1);
    expect(statuses.some((t) => t.includes(`ort-wasm-simd-threaded.wasm 0.0 of ${wasmMb} MB (0%)`))).toBe(true);
    const done = statuses.find((t) => t.includes(`ort-wasm-simd-threaded.wasm ${wasmMb} of ${wasmMb} MB (100%)`) && t.includes('model.onnx 1.0 of 1.0 MB (100%)'));
    expect(done, statuses.join('\n')).toBeDefined();

    // Stop (Esc) ends an in-page generation early, and the engine takes the next request.
    await setParam(page, 'max_tokens', '400');
    await page.getByLabel('ignore_eos').check();
    await page.keyboard.press('Control+Enter');
    await expect.poll(async () => ((await page.locator('.choice .output').textContent()) ?? '').length, WAIT).toBeGreaterThan(0);
    await page.keyboard.press('Escape');
    await page.locator('.choice .badge.stopped').waitFor();
    expect(await page.locator('#metric-finish').textContent()).toBe('stopped');
    expect(Number(await page.locator('#metric-tokens').textContent())).toBeLessThan(400);
    await setParam(page, 'max_tokens', '5');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('.choice .badge.length').waitFor();
    expect(errors).toEqual([]);
  });

  it('explains an invalid parameter inline, then shows the server’s error for it', async () => {
    const { page, errors } = await openPlayground();
    await setParam(page, 'top_p', '0');
    const inline = page.locator('#param-top_p-error');
    await inline.waitFor();
    const message = (await inline.textContent()) ?? '';
    // The spec's range for OpenAI top_p is (0, 1].
    expect(message).toBe('top_p must be a number in (0.0, 1.0], got 0');
    expect(await page.getByLabel('top_p', { exact: true }).getAttribute('aria-invalid')).toBe('true');
    expect(await page.locator('#validation-summary').textContent()).toContain('top_p');

    await page.getByRole('button', { name: 'Send' }).click();
    const error = page.locator('#api-error');
    await error.waitFor();
    expect(await error.textContent()).toContain('Error 400');
    expect(await error.textContent()).toContain('parameter top_p');
    const direct = await askServer('/v1/chat/completions', await shownRequestBody(page));
    expect(direct.status).toBe(400);
    expect(direct.json).toMatchObject({ object: 'error', param: 'top_p', message });
    expect(await error.locator('.error-message').textContent()).toBe(direct.json.message);

    // Fixing the value clears the inline error.
    await setParam(page, 'top_p', '0.9');
    await inline.waitFor({ state: 'hidden' });

    // best_of > n while streaming: valid for the schema, refused by the server (the best n
    // are only known at the end); the refusal lands on the field.
    await setParam(page, 'best_of', '2');
    await page.getByRole('button', { name: 'Send' }).click();
    await expect.poll(() => page.locator('#api-error .error-message').textContent(), WAIT).toContain('best_of must equal n when streaming');
    expect(await page.locator('#param-best_of-error').textContent()).toContain('best_of must equal n when streaming');
    expect(errors).toEqual([]);
  });

  it('shows n = 2 sampled sequences and beam search’s n best side by side, as the server answers them', async () => {
    const { page, errors } = await openPlayground();
    await page.getByRole('tab', { name: 'Completions' }).click();
    await page.getByLabel('Prompt', { exact: true }).fill('Once upon a time');
    await setParam(page, 'max_tokens', '24');
    await setParam(page, 'temperature', '0.9');
    await setParam(page, 'seed', '5');
    await setParam(page, 'n', '2');
    // The help says what the server does, not a refusal that no longer happens.
    const sequences = page.locator('[data-param="n"], [data-param="best_of"], [data-param="use_beam_search"]');
    expect(await sequences.count()).toBe(3);
    for (const text of await sequences.allTextContents()) expect(text).not.toMatch(/refuse|not supported/i);

    await page.getByRole('button', { name: 'Send' }).click();
    await expect.poll(() => page.locator('.choice .badge.length, .choice .badge.stop').count(), WAIT).toBe(2);
    const sampled = await page.locator('.choice .output').allTextContents();
    const direct = await askServer('/v1/completions', await shownRequestBody(page));
    expect(sampled).toEqual(direct.json.choices.map((c: { text: string }) => c.text));
    expect(sampled[0]).not.toBe(sampled[1]);

    await page.getByLabel('Stream tokens').uncheck();
    await setParam(page, 'temperature', '0');
    await setParam(page, 'top_k', '-1');
    await page.getByLabel('use_beam_search').check();
    await page.getByRole('button', { name: 'Send' }).click();
    await expect.poll(() => page.locator('.choice .badge.length, .choice .badge.stop').count(), WAIT).toBe(2);
    expect(await page.locator('#api-error').isVisible()).toBe(false);
    const beams = await page.locator('.choice .output').allTextContents();
    const beamBody = await shownRequestBody(page);
    expect(beamBody).toMatchObject({ use_beam_search: true, n: 2, temperature: 0 });
    const directBeams = await askServer('/v1/completions', beamBody);
    expect(beams).toEqual(directBeams.json.choices.map((c: { text: string }) => c.text));
    expect(errors).toEqual([]);
  });

  it('explains an in-page engine that cannot start, and clears that error when another engine is picked', async () => {
    const { page, errors } = await openPlayground();
    // A proxy or a stale deploy that answers with an HTML page instead of the .wasm.
    await page.route('**/playground/ort/ort-wasm-simd-threaded.wasm', (route) =>
      route.fulfill({ status: 200, contentType: 'application/wasm', body: '<html>Service unavailable</html>' }),
    );
    await page.getByText('In-page · WASM').click();
    await expect.poll(() => page.locator('#engine-status').textContent(), WAIT).toContain('could not be compiled');
    await page.getByRole('button', { name: 'Send' }).click();
    const error = page.locator('#api-error');
    await error.waitFor(WAIT);
    const message = (await error.textContent()) ?? '';
    expect(message).toContain('The In-page · WASM engine could not start: onnxruntime-web’s .wasm file could not be compiled');
    expect(message).toContain('expected magic word'); // onnxruntime's own words, kept for whoever debugs it
    expect(await page.locator('#engine-status').getAttribute('data-kind')).toBe('error');

    await page.getByText('Server', { exact: true }).click();
    await expect.poll(() => error.isVisible(), WAIT).toBe(false);
    expect(await page.locator('#engine-status').textContent()).toContain('Server: stories260k');
    expect(errors).toEqual([]);
  });
});
