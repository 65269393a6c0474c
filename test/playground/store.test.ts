import { describe, expect, it } from 'vitest';
import { defaultState, loadState, saveState } from '../../public/src/store.js';

function memoryStorage(initial?: string) {
  const data = new Map<string, string>();
  if (initial !== undefined) data.set('edge-llm.playground.v1', initial);
  return { getItem: (k: string) => data.get(k) ?? null, setItem: (k: string, v: string) => void data.set(k, v) };
}

describe('playground state storage', () => {
  it('restores what was saved', () => {
    const storage = memoryStorage();
    const state = { ...defaultState(), api: 'generate' as const, target: 'wasm' as const, prompt: 'Hello' };
    state.params.temperature = '0.3';
    state.params.ignore_eos = true;
    saveState(storage, state);
    expect(loadState(storage)).toEqual(state);
  });

  it('falls back to the defaults for anything missing or malformed', () => {
    expect(loadState(memoryStorage('not json'))).toEqual(defaultState());
    expect(loadState(undefined)).toEqual(defaultState());
    const loaded = loadState(memoryStorage(JSON.stringify({ api: 'nope', messages: [{ role: 1 }], params: { temperature: 5, ignore_eos: 'yes', top_p: '0.9' } })));
    expect(loaded.api).toBe(defaultState().api);
    expect(loaded.messages).toEqual(defaultState().messages);
    expect(loaded.params.temperature).toBe('');
    expect(loaded.params.ignore_eos).toBe(false);
    expect(loaded.params.top_p).toBe('0.9');
  });
});
