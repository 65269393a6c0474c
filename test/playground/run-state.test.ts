import { describe, expect, it } from 'vitest';
import { RunState } from '../../public/src/run-state.js';

const chatChunk = (choices: unknown[], usage?: unknown) =>
  JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 1, model: 'm', choices, ...(usage ? { usage } : {}) });

describe('RunState: chat streams', () => {
  it('assembles each sequence of an n = 2 stream in its own view, with its finish reason', () => {
    // vLLM's n > 1 stream: one role chunk per choice, then deltas interleaved by index.
    const state = new RunState('chat', true, 0);
    const events = [
      chatChunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]),
      chatChunk([{ index: 1, delta: { role: 'assistant', content: '' }, finish_reason: null }]),
      chatChunk([{ index: 1, delta: { content: 'The' }, finish_reason: null }]),
      chatChunk([{ index: 0, delta: { content: 'Once' }, finish_reason: null }]),
      chatChunk([{ index: 0, delta: { content: ' upon' }, finish_reason: 'length', stop_reason: null }]),
      chatChunk([{ index: 1, delta: { content: ' end' }, finish_reason: 'stop', stop_reason: '.' }]),
      chatChunk([], { prompt_tokens: 4, completion_tokens: 4, total_tokens: 8 }),
      '[DONE]',
    ];
    events.forEach((data, i) => expect(state.applyEvent(data, 10 + i)).toBe(true));
    expect(state.choices.map((c) => [c.index, c.text, c.finishReason, c.stopReason])).toEqual([
      [0, 'Once upon', 'length', null],
      [1, 'The end', 'stop', '.'],
    ]);
    expect(state.tokens()).toEqual({ count: 4, exact: true });
    // The first text arrived with the third event (time 12).
    expect(state.metrics(100).ttftMs).toBe(12);
  });

  it('counts one token per content chunk when the usage block is not requested', () => {
    const state = new RunState('chat', true, 0);
    state.applyEvent(chatChunk([{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }]), 1);
    // A step whose text is held back (a possible stop string) still sends a chunk.
    for (const content of ['A', '', 'B']) state.applyEvent(chatChunk([{ index: 0, delta: { content }, finish_reason: null }]), 2);
    expect(state.tokens()).toEqual({ count: 3, exact: true });
  });

  it('reports an error sent inside the stream', () => {
    const state = new RunState('chat', true, 0);
    state.status = 200;
    state.applyEvent(JSON.stringify({ error: { object: 'error', message: 'boom', type: 'InternalServerError', param: null, code: 500 } }), 1);
    expect(state.error).toEqual({ status: 500, message: 'boom', type: 'InternalServerError', param: null });
  });
});

describe('RunState: other APIs and bodies', () => {
  it('reads completions chunks and bodies', () => {
    const streamed = new RunState('completions', true, 0);
    streamed.applyEvent(JSON.stringify({ choices: [{ index: 0, text: 'Hi', finish_reason: null }] }), 5);
    streamed.applyEvent(JSON.stringify({ choices: [{ index: 0, text: '!', finish_reason: 'length', stop_reason: null }], usage: null }), 6);
    expect(streamed.choices[0]).toMatchObject({ text: 'Hi!', finishReason: 'length' });
    expect(streamed.tokens()).toEqual({ count: 2, exact: true });

    const whole = new RunState('completions', false, 0);
    whole.applyBody({ choices: [{ index: 0, text: 'Hello', finish_reason: 'stop', stop_reason: 2 }], usage: { prompt_tokens: 3, completion_tokens: 2 } }, 9);
    expect(whole.choices[0]).toMatchObject({ text: 'Hello', finishReason: 'stop', stopReason: 2 });
    expect(whole.tokens()).toEqual({ count: 2, exact: true });
    expect(whole.metrics(20).ttftMs).toBeNull();
  });

  it('reads chat bodies with several choices', () => {
    const state = new RunState('chat', false, 0);
    state.applyBody({ choices: [1, 0].map((index) => ({ index, message: { role: 'assistant', content: `#${index}` }, finish_reason: 'stop' })) }, 1);
    expect(state.choices.map((c) => c.text)).toEqual(['#0', '#1']);
  });

  it('appends /generate deltas per sequence, or replaces them with fullTextEnabled', () => {
    const deltas = new RunState('generate', true, 0);
    for (const text of [["'m", "'m"], [' the', ' '], [' founder', '22']]) deltas.applyEvent(JSON.stringify({ text }), 1);
    expect(deltas.choices.map((c) => c.text)).toEqual(["'m the founder", "'m 22"]);
    // /generate sends no event for steps whose text is held back: the count is a lower bound.
    expect(deltas.tokens()).toEqual({ count: 6, exact: false });

    const full = new RunState('generate', true, 0, '', true);
    for (const text of [["'m"], ["'m the"], ["'m the founder"]]) full.applyEvent(JSON.stringify({ text }), 1);
    expect(full.choices[0]!.text).toBe("'m the founder");
  });

  it('marks the echoed prompt of a non-streamed /generate answer', () => {
    const state = new RunState('generate', false, 0, 'My name is');
    state.applyBody({ text: ['My name is Olivier'] }, 1);
    expect(state.choices[0]).toMatchObject({ text: 'My name is Olivier', promptLength: 'My name is'.length });
  });

  it('takes the server’s error body apart', () => {
    const state = new RunState('generate', false, 0);
    state.setError({ object: 'error', message: 'top_p must be a number in (1e-06, 1.0], got 0', type: 'BadRequestError', param: 'top_p', code: 400 }, 400);
    expect(state.error).toEqual({ status: 400, message: 'top_p must be a number in (1e-06, 1.0], got 0', type: 'BadRequestError', param: 'top_p' });
    state.setError('Bad gateway', 502);
    expect(state.error).toEqual({ status: 502, message: 'Bad gateway', type: null, param: null });
  });

  it('ignores what it does not understand instead of failing', () => {
    const state = new RunState('chat', true, 0);
    expect(state.applyEvent('not json', 1)).toBe(false);
    expect(state.applyEvent('{"choices": "nope"}', 1)).toBe(false);
    expect(state.choices).toEqual([]);
    expect(state.tokens()).toBeNull();
  });
});
