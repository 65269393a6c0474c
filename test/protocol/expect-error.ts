import { expect } from 'vitest';
import { ProtocolError } from '../../src/common/protocol-error.js';

/** Runs `fn`, expects a 400-kind ProtocolError, and returns it for further checks. */
export function expectInvalidRequest(fn: () => unknown): ProtocolError {
  let thrown: unknown;
  try {
    fn();
  } catch (error) {
    thrown = error;
  }
  expect(thrown, 'expected a ProtocolError to be thrown').toBeInstanceOf(ProtocolError);
  const error = thrown as ProtocolError;
  expect(error.kind).toBe('invalid_request');
  return error;
}
