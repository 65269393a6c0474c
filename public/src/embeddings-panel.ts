/**
 * The Embeddings tab: inputs (one a line) sent to POST /v1/embeddings of the engine picked
 * in the top bar, and what comes back: each vector's norm and first values, and the cosine
 * similarity of every pair of inputs, drawn as a picture (a heat map, one cell a pair) and
 * given as a table for screen readers and copying. Served by the server the page came from
 * (`npm start` on an embedding folder or GGUF), or by the same app in the page (an
 * in-page engine on an embedding folder).
 */
import { h } from './dom.js';
import type { ApiFetch } from './transport.js';

/** The picked engine's fetch (an in-page one is started on first use) and its name for messages. */
export type EmbeddingsTarget = () => Promise<{ fetch: ApiFetch; where: string }>;

const DEFAULT_INPUTS = ['A cat sits on the mat.', 'A kitten rests on a rug.', 'The stock market fell sharply today.', 'Shares dropped at the opening bell.'];
/** Values of each vector shown in the table. */
const SHOWN_VALUES = 6;

interface EmbeddingsAnswer {
  data: Array<{ index: number; embedding: number[] }>;
  model: string;
  usage: { prompt_tokens: number };
}

export function cosineMatrix(vectors: readonly (readonly number[])[]): number[][] {
  const norms = vectors.map((v) => Math.hypot(...v));
  return vectors.map((a, i) =>
    vectors.map((b, j) => {
      let dot = 0;
      for (let k = 0; k < a.length; k += 1) dot += a[k]! * b[k]!;
      return norms[i]! === 0 || norms[j]! === 0 ? 0 : dot / (norms[i]! * norms[j]!);
    }),
  );
}

/** A similarity in [-1, 1] as a colour: blue for -1, white for 0, red for 1. */
export function similarityColour(value: number): [number, number, number] {
  const t = Math.max(-1, Math.min(1, value));
  const fade = (from: number) => Math.round(255 - (255 - from) * Math.abs(t));
  return t >= 0 ? [255, fade(40), fade(40)] : [fade(40), fade(90), 255];
}

function drawMatrix(canvas: HTMLCanvasElement, matrix: number[][]): void {
  const n = matrix.length;
  const cell = Math.max(8, Math.floor(240 / Math.max(1, n)));
  canvas.width = canvas.height = n * cell;
  const context = canvas.getContext('2d');
  if (context === null) return;
  matrix.forEach((row, i) =>
    row.forEach((value, j) => {
      const [r, g, b] = similarityColour(value);
      context.fillStyle = `rgb(${r}, ${g}, ${b})`;
      context.fillRect(j * cell, i * cell, cell, cell);
    }),
  );
}

export function createEmbeddingsPanel(container: HTMLElement, target: EmbeddingsTarget): void {
  const inputs = h('textarea', { id: 'embeddings-inputs', rows: 6, spellcheck: 'false', 'aria-label': 'Inputs, one a line' }) as HTMLTextAreaElement;
  inputs.value = DEFAULT_INPUTS.join('\n');
  const dimensions = h('input', { type: 'number', id: 'embeddings-dimensions', min: 1, placeholder: 'all', 'aria-label': 'dimensions (Matryoshka models only)' }) as HTMLInputElement;
  const send = h('button', { type: 'button', class: 'primary', id: 'embed' }, 'Embed');
  const status = h('p', { id: 'embeddings-status', role: 'status', 'aria-live': 'polite' });
  const error = h('div', { class: 'api-error', id: 'embeddings-error', role: 'alert', hidden: true });
  const vectors = h('table', { id: 'embeddings-vectors', class: 'embeddings-table' });
  const canvas = h('canvas', { id: 'embeddings-matrix', role: 'img', 'aria-label': 'Cosine similarity of every pair of inputs' }) as HTMLCanvasElement;
  const similarity = h('table', { id: 'embeddings-similarity', class: 'embeddings-table' });
  container.append(
    h('p', { class: 'help' }, 'POST /v1/embeddings on the engine picked above: one input a line. Below, each vector’s norm and first values, and how similar the inputs are (cosine: red 1, white 0, blue −1).'),
    inputs,
    h('label', { for: 'embeddings-dimensions' }, 'dimensions '),
    dimensions,
    send,
    status,
    error,
    vectors,
    h('div', { class: 'embeddings-matrix' }, canvas, similarity),
  );

  const show = (texts: string[], answer: EmbeddingsAnswer, ms: number, where: string) => {
    const ordered = [...answer.data].sort((a, b) => a.index - b.index).map((item) => item.embedding);
    const width = ordered[0]?.length ?? 0;
    status.textContent = `${ordered.length} vectors × ${width} dimensions from ${answer.model}, ${answer.usage.prompt_tokens} tokens, ${ms} ms · ${where}`;
    vectors.replaceChildren(
      h('tr', {}, h('th', {}, '#'), h('th', {}, 'input'), h('th', {}, 'norm'), h('th', {}, `first ${Math.min(SHOWN_VALUES, width)} values`)),
      ...ordered.map((vector, i) =>
        h('tr', {}, h('td', {}, String(i)), h('td', {}, texts[i]!), h('td', { class: 'norm' }, Math.hypot(...vector).toFixed(4)), h('td', { class: 'values' }, vector.slice(0, SHOWN_VALUES).map((v) => v.toFixed(4)).join(', ') + (width > SHOWN_VALUES ? ', …' : ''))),
      ),
    );
    const matrix = cosineMatrix(ordered);
    drawMatrix(canvas, matrix);
    similarity.replaceChildren(
      h('tr', {}, h('th', {}, ''), ...matrix.map((_, j) => h('th', { scope: 'col' }, String(j)))),
      ...matrix.map((row, i) => h('tr', {}, h('th', { scope: 'row' }, String(i)), ...row.map((value) => h('td', {}, value.toFixed(3))))),
    );
  };

  send.addEventListener('click', async () => {
    const texts = inputs.value.split('\n').map((line) => line.trim()).filter((line) => line !== '');
    error.hidden = true;
    if (texts.length === 0) {
      status.textContent = 'Type at least one input.';
      return;
    }
    const body: Record<string, unknown> = { input: texts, encoding_format: 'float' };
    if (dimensions.value.trim() !== '') body.dimensions = Number(dimensions.value);
    send.disabled = true;
    status.textContent = 'Embedding…';
    try {
      const { fetch: apiFetch, where } = await target();
      // The wait for an in-page engine to start is not the request's latency.
      const started = performance.now();
      const response = await apiFetch('/v1/embeddings', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      const answer = (await response.json()) as EmbeddingsAnswer & { error?: { message?: string } };
      if (!response.ok) throw new Error(`${response.status}: ${answer.error?.message ?? `the ${where} engine refused the request`}`);
      show(texts, answer, Math.round(performance.now() - started), where);
    } catch (failure) {
      status.textContent = '';
      error.textContent = (failure as Error).message;
      error.hidden = false;
    } finally {
      send.disabled = false;
    }
  });
}
