/**
 * The parameter form: one field per parameter of the specs, grouped, each with the rule
 * the spec states for the current API, a reset button, and an inline error. Numbers are
 * text fields (a number input would silently swallow "1,5" or "abc" instead of letting
 * the page explain the problem); sliders sit next to the knobs people sweep.
 */
import { APIS, type ApiId } from './apis.js';
import { h } from './dom.js';
import type { RawValue } from './form-values.js';
import { GROUPS, PARAMS, type ParamSpec } from './params.js';

export interface ParamsPanel {
  setApi(api: ApiId): void;
  setValues(values: Record<string, RawValue>): void;
  /** Shows a problem under a field; null clears it. `server`: the message came from a refused request. */
  setError(key: string, message: string | null, source?: 'check' | 'server'): void;
  clearErrors(source: 'check' | 'server'): void;
  has(key: string): boolean;
  focus(key: string): void;
}

interface FieldView {
  spec: ParamSpec;
  root: HTMLElement;
  input: HTMLInputElement | HTMLTextAreaElement;
  slider: HTMLInputElement | null;
  rule: HTMLElement;
  error: HTMLElement;
  errors: { check: string | null; server: string | null };
}

const decimals = (step: number) => (String(step).split('.')[1] ?? '').length;

function numericText(value: number, step: number): string {
  return value.toFixed(decimals(step));
}

export function createParamsPanel(container: HTMLElement, onChange: (key: string, value: RawValue) => void): ParamsPanel {
  const fields = new Map<string, FieldView>();
  let api: ApiId = 'chat';

  const groups = new Map(
    GROUPS.map((group) => {
      const body = h('div', { class: 'group-body' });
      const details = h('details', { class: 'group', open: group.open }, h('summary', {}, group.title), body);
      container.append(details);
      return [group.id, { details, body }] as const;
    }),
  );

  const syncSlider = (field: FieldView) => {
    const { slider, input, spec } = field;
    if (!slider) return;
    const text = input.value.trim();
    const value = Number(text === '' ? input.placeholder : text);
    slider.classList.toggle('unset', text === '');
    if (text !== '' && Number.isFinite(value)) slider.value = String(value);
    else if (text === '' && Number.isFinite(value)) slider.value = String(value);
    else slider.value = String(spec.slider!.min);
  };

  const showError = (field: FieldView) => {
    const message = field.errors.server ?? field.errors.check;
    field.error.textContent = message ?? '';
    field.error.hidden = message === null;
    field.root.classList.toggle('invalid', message !== null);
    field.input.setAttribute('aria-invalid', String(message !== null));
  };

  for (const spec of PARAMS) {
    const id = `param-${spec.key}`;
    const rule = h('p', { class: 'rule', id: `${id}-rule` });
    const help = h('p', { class: 'help', id: `${id}-help` }, spec.help);
    const error = h('p', { class: 'error', id: `${id}-error`, hidden: true });
    const describedBy = `${id}-rule ${id}-help ${id}-error`;
    let input: HTMLInputElement | HTMLTextAreaElement;
    let slider: HTMLInputElement | null = null;
    let root: HTMLElement;

    if (spec.kind === 'bool') {
      input = h('input', { type: 'checkbox', id, 'aria-describedby': describedBy });
      input.addEventListener('change', () => onChange(spec.key, (input as HTMLInputElement).checked));
      root = h('div', { class: 'field field-bool', 'data-param': spec.key },
        h('label', { class: 'check' }, input, h('code', {}, spec.key)), rule, help, error);
    } else {
      const multiline = spec.kind === 'stop' || spec.kind === 'json';
      input = multiline
        ? h('textarea', { id, rows: spec.kind === 'json' ? 3 : 2, spellcheck: 'false', 'aria-describedby': describedBy })
        : h('input', {
            type: 'text',
            id,
            inputmode: spec.kind === 'float' ? 'decimal' : spec.kind === 'token-ids' ? 'text' : 'numeric',
            autocomplete: 'off',
            spellcheck: 'false',
            'aria-describedby': describedBy,
          });
      const clear = h('button', {
        type: 'button',
        class: 'clear',
        title: 'Clear: use the default',
        'aria-label': `Clear ${spec.key}`,
      }, '×');
      const control = h('div', { class: 'control' });
      if (spec.slider) {
        const { min, max, step } = spec.slider;
        // The text field is the accessible control; the slider is a pointer shortcut to it.
        slider = h('input', { type: 'range', min, max, step, tabindex: -1, 'aria-hidden': 'true', class: 'slider' });
        const s = slider;
        s.addEventListener('input', () => {
          input.value = numericText(Number(s.value), step);
          s.classList.remove('unset');
          onChange(spec.key, input.value);
        });
        control.append(slider);
      }
      control.append(input);
      if (spec.kind === 'seed') {
        control.append(h('button', {
          type: 'button',
          class: 'dice',
          title: 'Pick a random seed',
          onclick: () => {
            input.value = String(1 + Math.floor(Math.random() * 2 ** 31));
            onChange(spec.key, input.value);
          },
        }, 'random'));
      }
      control.append(clear);
      clear.addEventListener('click', () => {
        input.value = '';
        onChange(spec.key, '');
        syncSlider(fields.get(spec.key)!);
        input.focus();
      });
      input.addEventListener('input', () => {
        onChange(spec.key, input.value);
        syncSlider(fields.get(spec.key)!);
      });
      // Arrow keys step numeric fields, like a number input but without its silent rejections.
      if (spec.kind === 'float' || spec.kind === 'int') {
        input.addEventListener('keydown', (event: Event) => {
          const { key } = event as KeyboardEvent;
          if (key !== 'ArrowUp' && key !== 'ArrowDown') return;
          const step = spec.slider?.step ?? 1;
          const current = Number(input.value.trim() === '' ? input.placeholder : input.value);
          if (!Number.isFinite(current)) return;
          event.preventDefault();
          const next = current + (key === 'ArrowUp' ? step : -step);
          input.value = spec.kind === 'int' ? String(Math.round(next)) : numericText(next, step);
          onChange(spec.key, input.value);
          syncSlider(fields.get(spec.key)!);
        });
      }
      root = h('div', { class: `field field-${spec.kind}`, 'data-param': spec.key },
        h('label', { for: id }, h('code', {}, spec.key)), control, rule, help, error);
    }
    groups.get(spec.group)!.body.append(root);
    fields.set(spec.key, { spec, root, input, slider, rule, error, errors: { check: null, server: null } });
  }

  return {
    setApi(next) {
      api = next;
      const family = APIS[api].family;
      for (const field of fields.values()) {
        const applies = field.spec.apis.includes(api);
        field.root.hidden = !applies;
        field.rule.textContent = field.spec.rule[family] ?? '';
        if (field.input instanceof HTMLInputElement && field.input.type === 'checkbox') continue;
        field.input.placeholder = field.spec.placeholder?.[family] ?? '';
        syncSlider(field);
      }
      for (const [groupId, group] of groups) {
        const visible = PARAMS.some((p) => p.group === groupId && p.apis.includes(api));
        group.details.hidden = !visible;
      }
    },
    setValues(values) {
      for (const field of fields.values()) {
        const value = values[field.spec.key];
        if (field.input instanceof HTMLInputElement && field.input.type === 'checkbox') {
          field.input.checked = value === true;
        } else {
          field.input.value = typeof value === 'string' ? value : '';
          syncSlider(field);
        }
      }
    },
    setError(key, message, source = 'check') {
      const field = fields.get(key);
      if (!field) return;
      field.errors[source] = message;
      showError(field);
      // A problem inside a closed group must not go unseen.
      if (message !== null) (field.root.closest('details') as HTMLDetailsElement | null)?.setAttribute('open', '');
    },
    clearErrors(source) {
      for (const field of fields.values()) {
        if (field.errors[source] === null) continue;
        field.errors[source] = null;
        showError(field);
      }
    },
    has: (key) => fields.has(key) && fields.get(key)!.spec.apis.includes(api),
    focus(key) {
      const field = fields.get(key);
      if (!field) return;
      (field.root.closest('details') as HTMLDetailsElement | null)?.setAttribute('open', '');
      field.input.focus();
    },
  };
}
