/**
 * The playground on a phone-sized screen (390 px, an iPhone 12–15's CSS width): the header
 * (title, engine switch, status) and the page fit without scrolling sideways, and Send
 * brings the answer (below the request in one column) into view.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { BROWSER_TEST_TIMEOUT, closeContexts, finishedText, launchChromium, openPlayground, OUTPUT_DIR, startPlaygroundServer, type PlaygroundServer } from './playground-harness.js';

const PHONE = { width: 390, height: 844 };

let server: PlaygroundServer;
let browser: Browser;

/** Elements of the header whose box reaches past the screen's edges, or that overflow their own box. */
function overflowing(page: Page, selector: string): Promise<string[]> {
  return page.evaluate(
    ({ selector, width }) => {
      const out: string[] = [];
      const root = document.querySelector(selector)!;
      for (const element of [root, ...root.querySelectorAll('*')]) {
        const box = element.getBoundingClientRect();
        if (box.width <= 1 || box.height <= 1) continue; // hidden, or visually hidden for screen readers
        const name = `${element.tagName.toLowerCase()}${element.id ? `#${element.id}` : ''}${element.className ? `.${String(element.className).split(' ').join('.')}` : ''}`;
        if (box.left < 0 || box.right > width) out.push(`${name} spans ${box.left.toFixed(0)}..${box.right.toFixed(0)}`);
        const style = getComputedStyle(element);
        if (element.scrollWidth > element.clientWidth + 1 && style.overflowX !== 'visible' && element.clientWidth > 0) out.push(`${name} scrolls sideways`);
      }
      return out;
    },
    { selector, width: PHONE.width },
  );
}

describe('playground on a 390 px phone', { timeout: BROWSER_TEST_TIMEOUT }, () => {
  beforeAll(async () => {
    server = await startPlaygroundServer('phone');
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await server?.close();
  });
  afterEach(closeContexts);

  it('fits the header and the page in the screen’s width', async () => {
    const { page, errors } = await openPlayground(browser, server.baseUrl, PHONE);
    await page.locator('.topbar').screenshot({ path: `${OUTPUT_DIR}/playground-phone-header.png` });
    await page.screenshot({ path: `${OUTPUT_DIR}/playground-phone-top.png` });
    expect(await overflowing(page, '.topbar')).toEqual([]);
    expect(await page.evaluate(() => document.documentElement.scrollWidth)).toBeLessThanOrEqual(PHONE.width);
    // Every engine is a visible, tappable option on one screen.
    for (const label of ['Server', 'In-page · WASM', 'In-page · WebGPU']) {
      const box = (await page.getByText(label, { exact: true }).boundingBox())!;
      expect(box.x).toBeGreaterThanOrEqual(0);
      expect(box.x + box.width).toBeLessThanOrEqual(PHONE.width);
      expect(box.height).toBeGreaterThanOrEqual(24);
    }
    expect(errors).toEqual([]);
  });

  it('scrolls to the answer when Send is tapped', async () => {
    const { page, errors } = await openPlayground(browser, server.baseUrl, PHONE);
    const resultsTop = () => page.evaluate(() => document.querySelector('.results')!.getBoundingClientRect().top);
    await page.evaluate(() => window.scrollTo(0, 0));
    // In one column the answer sits below the request and its buttons.
    expect(await resultsTop()).toBeGreaterThan(100);
    await page.locator('#send').click();
    expect((await finishedText(page)).length).toBeGreaterThan(0);
    // Scrolled down to the answer: its text is on the screen.
    await page.waitForFunction(() => {
      const box = document.querySelector('.choice .output')!.getBoundingClientRect();
      return box.top >= 0 && box.top < window.innerHeight;
    });
    expect(await page.evaluate(() => window.scrollY)).toBeGreaterThan(100);
    expect(errors).toEqual([]);
  });
});
