import { describe, expect, it } from 'vitest';
import { topLevelParam } from '../../public/src/param-path.js';
import { validateRequest } from '../../public/src/validation.js';

describe('validateRequest', () => {
  it('accepts a well-formed request of each API', () => {
    expect(validateRequest('chat', { model: 'm', messages: [{ role: 'user', content: 'hi' }], temperature: 0.5 }).size).toBe(0);
    expect(validateRequest('completions', { model: 'm', prompt: 'hi', top_k: -1, seed: -1n }).size).toBe(0);
    expect(validateRequest('generate', { prompt: 'hi', seed: 18446744073709551615n, top_k: 1 }).size).toBe(0);
  });

  it('applies each API’s own range: top_p is (1e-6, 1] on /generate, (0, 1] on OpenAI', () => {
    expect(validateRequest('generate', { prompt: 'x', top_p: 1e-6 }).get('top_p')).toMatch(/top_p must be a number in \(1e-06, 1\.0\]/);
    expect(validateRequest('completions', { model: 'm', prompt: 'x', top_p: 1e-6 }).size).toBe(0);
    expect(validateRequest('completions', { model: 'm', prompt: 'x', top_p: 0 }).get('top_p')).toMatch(/\(0\.0, 1\.0\]/);
  });

  it('reports each faulty field under its top-level name', () => {
    const problems = validateRequest('generate', { prompt: '', repetition_penalty: 0, stop: ['ok', ''], seed: 0n, n: 129 });
    expect([...problems.keys()].sort()).toEqual(['n', 'prompt', 'repetition_penalty', 'seed', 'stop']);
    expect(problems.get('repetition_penalty')).toContain('(0.0, 2.0]');
    expect(problems.get('seed')).toContain('18446744073709551615');
  });

  it('explains values typed as text', () => {
    expect(validateRequest('chat', { model: 'm', messages: [{ role: 'user', content: 'x' }], temperature: 'warm' }).get('temperature')).toBe(
      'temperature must be a number >= 0.0, got "warm"',
    );
  });
});

describe('topLevelParam', () => {
  it('maps nested parameter paths to the form field that holds them', () => {
    expect(topLevelParam('stop[1]')).toBe('stop');
    expect(topLevelParam('messages[0].content')).toBe('messages');
    expect(topLevelParam('stream_options.include_usage')).toBe('stream_options');
    expect(topLevelParam(null)).toBe('');
  });
});
