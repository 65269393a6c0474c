/** An accessible tab strip (WAI-ARIA tabs pattern): arrow keys, Home and End move between tabs. */
import { h } from './dom.js';

export interface TabItem<T extends string> {
  id: T;
  label: string;
  title?: string;
  /** id of the element the tab controls. */
  controls?: string;
}

export interface Tabs<T extends string> {
  select(id: T, focus?: boolean): void;
  button(id: T): HTMLButtonElement;
}

export function createTabs<T extends string>(
  container: HTMLElement,
  items: ReadonlyArray<TabItem<T>>,
  initial: T,
  onSelect: (id: T) => void,
): Tabs<T> {
  const buttons = new Map<T, HTMLButtonElement>();
  const select = (id: T, focus = false) => {
    for (const [itemId, button] of buttons) {
      const active = itemId === id;
      button.setAttribute('aria-selected', String(active));
      button.tabIndex = active ? 0 : -1;
      if (active && focus) button.focus();
    }
  };
  items.forEach((item, i) => {
    const button = h('button', {
      type: 'button',
      role: 'tab',
      id: `tab-${item.id}`,
      title: item.title,
      'aria-controls': item.controls,
      onclick: () => {
        select(item.id);
        onSelect(item.id);
      },
      onkeydown: ((event: KeyboardEvent) => {
        const last = items.length - 1;
        const next = { ArrowRight: i + 1 > last ? 0 : i + 1, ArrowLeft: i - 1 < 0 ? last : i - 1, Home: 0, End: last }[event.key];
        if (next === undefined) return;
        event.preventDefault();
        const target = items[next]!.id;
        select(target, true);
        onSelect(target);
      }) as EventListener,
    }, item.label);
    buttons.set(item.id, button);
    container.append(button);
  });
  select(initial);
  return { select, button: (id) => buttons.get(id)! };
}
