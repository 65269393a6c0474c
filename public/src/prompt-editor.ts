/** The prompt (completions, /generate) or the conversation (chat) being sent. */
import type { ApiId } from './apis.js';
import { h } from './dom.js';
import type { ChatMessageDraft } from './request.js';
import { CHAT_ROLES } from './store.js';

export interface PromptEditor {
  render(api: ApiId, prompt: string, messages: ChatMessageDraft[]): void;
  setError(message: string | null): void;
  focus(): void;
}

export interface PromptEditorEvents {
  onPrompt(prompt: string): void;
  onMessages(messages: ChatMessageDraft[]): void;
}

export function createPromptEditor(container: HTMLElement, events: PromptEditorEvents): PromptEditor {
  const body = h('div', { class: 'prompt-body' });
  const error = h('p', { class: 'error', id: 'prompt-error', hidden: true });
  container.append(body, error);
  let messages: ChatMessageDraft[] = [];
  let firstInput: HTMLElement | null = null;

  const renderPrompt = (prompt: string) => {
    const area = h('textarea', {
      id: 'prompt',
      rows: 5,
      'aria-describedby': 'prompt-error',
      oninput: () => events.onPrompt(area.value),
    });
    area.value = prompt;
    firstInput = area;
    body.replaceChildren(h('label', { for: 'prompt', class: 'block-label' }, 'Prompt'), area);
  };

  const renderMessages = (focusIndex?: number) => {
    const list = h('ol', { class: 'messages', 'aria-label': 'Messages' });
    messages.forEach((message, i) => {
      const role = h('select', {
        'aria-label': `Role of message ${i + 1}`,
        onchange: () => {
          messages[i] = { ...messages[i]!, role: role.value };
          item.className = `message role-${role.value}`;
          content.setAttribute('aria-label', `Message ${i + 1} (${role.value})`);
          events.onMessages(messages);
        },
      }, ...CHAT_ROLES.map((r) => h('option', { value: r, selected: r === message.role }, r)));
      const content = h('textarea', {
        rows: 3,
        'aria-label': `Message ${i + 1} (${message.role})`,
        'aria-describedby': 'prompt-error',
        oninput: () => {
          messages[i] = { ...messages[i]!, content: content.value };
          events.onMessages(messages);
        },
      });
      content.value = message.content;
      const remove = h('button', {
        type: 'button',
        class: 'icon',
        title: 'Remove this message',
        'aria-label': `Remove message ${i + 1}`,
        disabled: messages.length === 1,
        onclick: () => {
          messages.splice(i, 1);
          events.onMessages(messages);
          renderMessages(Math.min(i, messages.length - 1));
        },
      }, '×');
      const item = h('li', { class: `message role-${message.role}` }, h('div', { class: 'message-head' }, role, remove), content);
      list.append(item);
      if (i === 0) firstInput = content;
      if (i === focusIndex) queueMicrotask(() => content.focus());
    });
    const add = h('button', {
      type: 'button',
      class: 'link',
      onclick: () => {
        const last = messages[messages.length - 1]?.role;
        messages.push({ role: last === 'user' ? 'assistant' : 'user', content: '' });
        events.onMessages(messages);
        renderMessages(messages.length - 1);
      },
    }, '+ Add message');
    body.replaceChildren(h('p', { class: 'block-label' }, 'Messages'), list, add);
  };

  return {
    render(api, prompt, nextMessages) {
      messages = nextMessages.map((m) => ({ ...m }));
      if (api === 'chat') renderMessages();
      else renderPrompt(prompt);
    },
    setError(message) {
      error.textContent = message ?? '';
      error.hidden = message === null;
      container.classList.toggle('invalid', message !== null);
    },
    focus: () => firstInput?.focus(),
  };
}
