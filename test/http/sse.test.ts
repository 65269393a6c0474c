import { describe, expect, it, vi } from 'vitest';
import { sseEvent, sseResponse } from '../../src/http/sse.js';

async function* payloads(items: string[], log: string[]): AsyncGenerator<string> {
  try {
    for (const item of items) {
      log.push(`yield ${item}`);
      yield item;
    }
  } finally {
    log.push('finally');
  }
}

describe('sseEvent', () => {
  it('frames a payload as one data line and a blank line', () => {
    expect(sseEvent('{"a":1}')).toBe('data: {"a":1}\n\n');
  });
});

describe('sseResponse', () => {
  it('sends each payload as one event with SSE headers', async () => {
    const response = sseResponse(payloads(['{"x":"a\\nb"}', '[DONE]'], []));
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/);
    expect(response.headers.get('cache-control')).toBe('no-cache');
    expect(await response.text()).toBe('data: {"x":"a\\nb"}\n\ndata: [DONE]\n\n');
  });

  it('pulls lazily and, when the reader cancels, runs onCancel and closes the source', async () => {
    const log: string[] = [];
    let cancelled = 0;
    const response = sseResponse(payloads(['1', '2', '3'], log), () => cancelled++);
    const reader = response.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toBe('data: 1\n\n');
    await reader.cancel();
    expect(cancelled).toBe(1);
    expect(log).toContain('finally');
    expect(log).not.toContain('yield 3');
  });

  it('turns an exception from the source into an error event and ends the stream', async () => {
    async function* failing(): AsyncGenerator<string> {
      yield 'ok';
      throw new Error('engine exploded');
    }
    const logged = vi.spyOn(console, 'error').mockImplementation(() => {});
    const text = await sseResponse(failing()).text();
    expect(logged).toHaveBeenCalled();
    logged.mockRestore();
    const events = text.split('\n\n').filter(Boolean);
    expect(events[0]).toBe('data: ok');
    const info = { message: 'Internal server error: engine exploded', type: 'InternalServerError', param: null, code: 500 };
    expect(JSON.parse(events[1]!.slice('data: '.length))).toEqual({ object: 'error', ...info, error: info });
    expect(events).toHaveLength(2);
  });
});
