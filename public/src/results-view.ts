/** The response side: metrics, one card per sequence (side by side when n > 1) and the API error. */
import { h } from './dom.js';
import type { ChoiceView, RunState } from './run-state.js';

export interface ResultsView {
  /** Renders the run; `running` while the response is still arriving. */
  render(state: RunState, running: boolean): void;
  clear(): void;
}

const FINISH_TEXT: Record<string, string> = {
  stop: 'stop — end of sequence or a stop string/token',
  length: 'length — max_tokens or the context was reached',
  abort: 'abort — the request was cancelled',
};

const GENERATE_NO_REASON = 'MindIE’s /generate response carries only the text: it reports no finish reason.';

function formatMs(ms: number | null): string {
  if (ms === null) return '—';
  return ms < 1000 ? `${ms.toFixed(0)} ms` : `${(ms / 1000).toFixed(2)} s`;
}

export function createResultsView(metrics: HTMLElement, choices: HTMLElement, error: HTMLElement): ResultsView {
  const metric = (name: string, label: string, title: string) => {
    const value = h('dd', { id: `metric-${name}` }, '—');
    metrics.append(h('div', { class: 'metric', title }, h('dt', {}, label), value));
    return value;
  };
  const status = metric('status', 'Status', 'HTTP status of the response');
  const ttft = metric('ttft', 'Time to first token', 'From sending to the first text (streaming only)');
  const tokens = metric('tokens', 'Tokens', 'Generated tokens: from the usage block, else counted from stream events (≈ on /generate)');
  const rate = metric('rate', 'Tokens/s', 'Generated tokens per second, over the whole request');
  const elapsed = metric('elapsed', 'Total time', 'From sending to the end of the response');
  const finish = metric('finish', 'Finish reason', 'Why each sequence ended');

  const cards = new Map<number, { root: HTMLElement; badge: HTMLElement; prompt: HTMLElement; text: Text; caret: HTMLElement }>();

  const card = (choice: ChoiceView) => {
    let view = cards.get(choice.index);
    if (view) return view;
    const badge = h('span', { class: 'badge', 'data-role': 'finish' });
    const prompt = h('span', { class: 'echoed-prompt', title: 'The prompt, which /generate returns in front of the output' });
    const text = document.createTextNode('');
    const caret = h('span', { class: 'caret', 'aria-hidden': 'true' });
    const root = h('article', { class: 'choice', 'aria-label': `Sequence ${choice.index}`, 'data-index': choice.index },
      h('header', {}, h('h3', {}, `Sequence ${choice.index}`), badge),
      h('pre', { class: 'output', 'aria-live': 'off' }, prompt, text, caret));
    view = { root, badge, prompt, text, caret };
    cards.set(choice.index, view);
    choices.append(root);
    return view;
  };

  const clear = () => {
    cards.clear();
    choices.replaceChildren();
    for (const dd of [status, ttft, tokens, rate, elapsed, finish]) dd.textContent = '—';
    status.className = '';
    error.hidden = true;
    error.replaceChildren();
  };

  return {
    clear,
    render(state, running) {
      const now = performance.now();
      const m = state.metrics(now);
      status.textContent = state.status === null ? (running ? 'sending…' : '—') : String(state.status);
      status.className = state.status === null ? '' : state.status < 400 ? 'ok' : 'bad';
      ttft.textContent = formatMs(m.ttftMs);
      tokens.textContent = m.tokens ? `${m.tokens.exact ? '' : '≈'}${m.tokens.count}` : '—';
      rate.textContent = m.tokensPerSecond === null ? '—' : m.tokensPerSecond.toFixed(1);
      elapsed.textContent = formatMs(m.elapsedMs);

      for (const choice of state.choices) {
        const view = card(choice);
        view.prompt.textContent = choice.text.slice(0, choice.promptLength);
        const output = choice.text.slice(choice.promptLength);
        if (view.text.data !== output) view.text.data = output;
        const reason = choice.finishReason ?? (running ? null : state.stopped ? 'stopped' : null);
        const unreported = reason === null && !running && state.api === 'generate';
        view.badge.textContent = unreported ? 'done' : reason === null ? (running ? 'generating…' : '') : `finish: ${reason}`;
        view.badge.title = unreported ? GENERATE_NO_REASON : reason === null ? '' : (FINISH_TEXT[reason] ?? reason);
        if (choice.stopReason !== null) view.badge.textContent += ` (${JSON.stringify(choice.stopReason)})`;
        view.badge.className = `badge ${reason ?? 'running'}`;
        view.caret.hidden = !running || choice.finishReason !== null;
      }
      choices.classList.toggle('many', state.choices.length > 1);

      const reasons = state.choices.map((c) => c.finishReason).filter((r): r is string => r !== null);
      finish.textContent = reasons.length > 0
        ? [...new Set(reasons)].join(', ')
        : state.stopped ? 'stopped' : running ? '…' : state.api === 'generate' && state.choices.length > 0 ? 'not reported' : '—';
      finish.title = finish.textContent === 'not reported' ? GENERATE_NO_REASON : '';

      if (state.error) {
        const e = state.error;
        error.hidden = false;
        error.replaceChildren(
          h('p', { class: 'error-title' },
            h('strong', {}, e.status === null ? 'Request failed' : `Error ${e.status}`),
            e.type ? ` ${e.type}` : '',
            e.param ? h('span', {}, ' · parameter ', h('code', {}, e.param)) : ''),
          h('p', { class: 'error-message' }, e.message),
        );
      } else {
        error.hidden = true;
      }
    },
  };
}
