import { describe, expect, it } from 'vitest';
import { pickGuidedDecoding } from '../../src/guided/pick-guided-decoding.js';
import { ProtocolError } from '../../src/common/protocol-error.js';

const VLLM_MESSAGE = "You can only use one kind of guided decoding ('guided_json', 'guided_regex' or 'guided_choice').";

function refusal(fields: Parameters<typeof pickGuidedDecoding>[0]): ProtocolError {
  try {
    pickGuidedDecoding(fields);
  } catch (error) {
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as ProtocolError).kind).toBe('invalid_request');
    return error as ProtocolError;
  }
  throw new Error('expected a ProtocolError');
}

describe('pickGuidedDecoding', () => {
  it('returns null when nothing asks for structured output', () => {
    expect(pickGuidedDecoding({})).toBeNull();
    expect(pickGuidedDecoding({ guided_json: null, response_format: { type: 'text' } })).toBeNull();
  });

  it('returns the one kind given, remembering the field for error messages', () => {
    const schema = { type: 'object' };
    expect(pickGuidedDecoding({ guided_json: schema })).toEqual({ kind: 'json', schema, param: 'guided_json' });
    expect(pickGuidedDecoding({ guided_json: '{"type":"string"}' })).toEqual({ kind: 'json', schema: '{"type":"string"}', param: 'guided_json' });
    expect(pickGuidedDecoding({ guided_regex: '\\d+' })).toEqual({ kind: 'regex', pattern: '\\d+', param: 'guided_regex' });
    expect(pickGuidedDecoding({ guided_choice: ['a', 'b'] })).toEqual({ kind: 'choice', choices: ['a', 'b'], param: 'guided_choice' });
  });

  it("reads OpenAI's response_format as guided_json", () => {
    expect(pickGuidedDecoding({ response_format: { type: 'json_object' } })).toEqual({ kind: 'json_object', param: 'response_format' });
    const schema = { type: 'object', properties: { a: { type: 'integer' } } };
    expect(pickGuidedDecoding({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema } } })).toEqual({
      kind: 'json',
      schema,
      param: 'response_format',
    });
    // No schema: any JSON value.
    expect(pickGuidedDecoding({ response_format: { type: 'json_schema', json_schema: { name: 'x' } } })).toEqual({
      kind: 'json',
      schema: {},
      param: 'response_format',
    });
  });

  it.each([
    [{ guided_json: {}, guided_regex: 'a' }, 'guided_regex'],
    [{ guided_regex: 'a', guided_choice: ['a'] }, 'guided_choice'],
    [{ guided_json: {}, guided_choice: ['a'] }, 'guided_choice'],
    [{ guided_regex: 'a', response_format: { type: 'json_object' } }, 'response_format'],
    [{ guided_json: {}, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: {} } } }, 'response_format'],
  ])("refuses two kinds at once with vLLM's message (%j)", (fields, param) => {
    const error = refusal(fields);
    expect(error.message).toBe(VLLM_MESSAGE);
    expect(error.param).toBe(param);
  });

  it('refuses malformed fields and guided_grammar, naming the field', () => {
    expect(refusal({ guided_json: 3 }).param).toBe('guided_json');
    expect(refusal({ guided_json: [] }).param).toBe('guided_json');
    expect(refusal({ guided_regex: 5 }).param).toBe('guided_regex');
    expect(refusal({ guided_choice: [] }).param).toBe('guided_choice');
    expect(refusal({ guided_choice: ['a', 1] }).param).toBe('guided_choice');
    expect(refusal({ response_format: { type: 'xml' } }).param).toBe('response_format.type');
    expect(refusal({ response_format: { type: 'json_schema' } }).param).toBe('response_format.json_schema');
    expect(refusal({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema: false } } }).param).toBe(
      'response_format.json_schema.schema',
    );
    expect(refusal({ guided_grammar: 'root ::= "a"' }).message).toMatch(/guided_grammar is not supported/);
  });
});
