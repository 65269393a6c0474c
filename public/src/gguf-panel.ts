/**
 * "Run a GGUF in this page": a .gguf file from disk (the picker, or dropped anywhere on the
 * page) or a URL; the in-page engine then builds its graph from the file and serves it.
 * Below it, the in-page engine's startup report (architecture, tensor types and how each
 * is executed, as `npm start` prints them).
 */
import { h } from './dom.js';

/** What the page was given (src/runtime/browser/gguf.ts reads it). */
export type GgufPick = { kind: 'file'; file: File } | { kind: 'url'; url: string };

export function isGgufName(name: string): boolean {
  return /\.gguf$/i.test(name);
}

export function createGgufPanel(container: HTMLElement, onPick: (pick: GgufPick) => void, initialUrl = '') {
  const input = h('input', { type: 'file', id: 'gguf-file', accept: '.gguf', class: 'visually-hidden' }) as HTMLInputElement;
  const openButton = h('button', { type: 'button', id: 'gguf-open' }, 'Open a .gguf file…');
  const url = h('input', { type: 'url', id: 'gguf-url', placeholder: 'https://…/model.gguf', 'aria-label': 'GGUF URL' }) as HTMLInputElement;
  url.value = initialUrl;
  const loadUrl = h('button', { type: 'button', id: 'gguf-load-url' }, 'Load URL');
  const note = h('span', { id: 'gguf-note', role: 'status', 'aria-live': 'polite' });
  const reportText = h('pre', { id: 'gguf-report-text' });
  const report = h('details', { id: 'inpage-report', class: 'inpage-report', hidden: true }, h('summary', {}, 'In-page engine startup report'), reportText);
  container.append(
    h('span', {}, 'GGUF in this page: '),
    openButton,
    input,
    h('span', {}, ' or drop one on the page · or '),
    url,
    loadUrl,
    note,
    report,
  );

  const pickFile = (file: File) => {
    if (!isGgufName(file.name)) {
      note.textContent = `${file.name} is not a .gguf file.`;
      return;
    }
    note.textContent = `${file.name} picked.`;
    onPick({ kind: 'file', file });
  };
  openButton.addEventListener('click', () => input.click());
  input.addEventListener('change', () => {
    const file = input.files?.[0];
    if (file) pickFile(file);
    input.value = ''; // The same file picked again loads again.
  });
  const submitUrl = () => {
    const value = url.value.trim();
    if (value === '') {
      note.textContent = 'Give the URL of a .gguf file.';
      return;
    }
    note.textContent = '';
    onPick({ kind: 'url', url: value });
  };
  loadUrl.addEventListener('click', submitUrl);
  url.addEventListener('keydown', (event) => {
    if (event.key === 'Enter') {
      event.preventDefault();
      submitUrl();
    }
  });

  // A .gguf dropped anywhere on the page.
  const hasFiles = (event: DragEvent) => event.dataTransfer?.types.includes('Files') ?? false;
  document.addEventListener('dragover', (event) => {
    if (!hasFiles(event)) return;
    event.preventDefault();
    document.body.classList.add('dropping');
  });
  document.addEventListener('dragleave', (event) => {
    if (event.relatedTarget === null) document.body.classList.remove('dropping');
  });
  document.addEventListener('drop', (event) => {
    document.body.classList.remove('dropping');
    const file = event.dataTransfer?.files[0];
    if (!file) return;
    event.preventDefault();
    pickFile(file);
  });

  return {
    /** The in-page engine's startup report (empty: hidden). */
    showReport(lines: readonly string[]): void {
      reportText.textContent = lines.join('\n');
      report.hidden = lines.length === 0;
    },
    setNote(text: string): void {
      note.textContent = text;
    },
  };
}
