import type { z } from 'zod';
import { ProtocolError } from '../common/protocol-error.js';
import { describeIssue, plainErrorMap } from '../common/zod-issues.js';

/**
 * Validates a parsed JSON body against a request schema. On failure throws
 * ProtocolError('invalid_request') describing the first problem in plain words, e.g.
 * "top_p must be a number in (1e-06, 1.0], got 0", with `param` set to the dotted path
 * of the offending parameter ("messages[1].content").
 */
export function parseRequest<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  const result = schema.safeParse(body, { reportInput: true, error: plainErrorMap });
  if (result.success) return result.data;
  const first = result.error.issues[0];
  if (first === undefined) throw new ProtocolError('invalid_request', 'The request is invalid.');
  const { message, param } = describeIssue(first);
  return fail(message, param);
}

function fail(message: string, param: string | null): never {
  throw new ProtocolError('invalid_request', message, param);
}
