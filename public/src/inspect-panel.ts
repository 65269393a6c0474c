/** The exact request (as curl and as JSON) and the raw response, each with a copy button. */
import { copyText, h } from './dom.js';
import { createTabs } from './tabs.js';

type PanelId = 'curl' | 'request' | 'response';

export interface InspectPanel {
  set(panel: PanelId, text: string, note?: string): void;
  show(panel: PanelId): void;
}

const LABELS: Record<PanelId, string> = { curl: 'curl', request: 'Request body', response: 'Raw response' };

export function createInspectPanel(tabStrip: HTMLElement, panels: HTMLElement): InspectPanel {
  const views = new Map<PanelId, { root: HTMLElement; pre: HTMLElement; note: HTMLElement }>();
  for (const id of Object.keys(LABELS) as PanelId[]) {
    const pre = h('pre', { class: 'code', id: `inspect-${id}-text`, tabindex: 0 });
    const note = h('p', { class: 'note', hidden: true });
    const copy = h('button', {
      type: 'button',
      class: 'copy',
      'aria-label': `Copy ${LABELS[id]}`,
      onclick: async () => {
        const ok = await copyText(pre.textContent ?? '');
        copy.textContent = ok ? 'Copied' : 'Copy failed';
        setTimeout(() => (copy.textContent = 'Copy'), 1200);
      },
    }, 'Copy');
    const root = h('div', { role: 'tabpanel', id: `inspect-${id}`, 'aria-labelledby': `tab-${id}`, class: 'inspect-panel' },
      h('div', { class: 'inspect-head' }, note, copy), pre);
    views.set(id, { root, pre, note });
    panels.append(root);
  }
  const show = (panel: PanelId) => {
    for (const [id, view] of views) view.root.hidden = id !== panel;
  };
  const tabs = createTabs<PanelId>(
    tabStrip,
    (Object.keys(LABELS) as PanelId[]).map((id) => ({ id, label: LABELS[id], controls: `inspect-${id}` })),
    'curl',
    show,
  );
  show('curl');
  return {
    set(panel, text, note) {
      const view = views.get(panel)!;
      if (view.pre.textContent !== text) view.pre.textContent = text;
      view.note.textContent = note ?? '';
      view.note.hidden = !note;
    },
    show(panel) {
      tabs.select(panel);
      show(panel);
    },
  };
}
