/**
 * Checks a request body with the server's own request schemas before it is sent, so a
 * field shows the very message the server would answer with ("top_p must be a number in
 * (1e-06, 1.0], got 0") while the user types. Rules that depend on the server's settings
 * or the model (context length, n > 1 with greedy sampling, ...) are left to the server;
 * its error then lands on the field named by the error's `param`.
 */
import type { z } from 'zod';
import { describeIssue, plainErrorMap } from '../../src/common/zod-issues.js';
import { MindieGenerateRequestSchema } from '../../src/protocol/mindie.js';
import { ChatCompletionRequestSchema } from '../../src/protocol/openai-chat.js';
import { CompletionRequestSchema } from '../../src/protocol/openai-completions.js';
import type { ApiId } from './apis.js';
import { topLevelParam } from './param-path.js';

const SCHEMAS: Record<ApiId, z.ZodType> = {
  chat: ChatCompletionRequestSchema,
  completions: CompletionRequestSchema,
  generate: MindieGenerateRequestSchema,
};

/** Problems by top-level request field, first problem per field. Empty when valid. */
export function validateRequest(api: ApiId, body: unknown): Map<string, string> {
  const problems = new Map<string, string>();
  const result = SCHEMAS[api].safeParse(body, { reportInput: true, error: plainErrorMap });
  if (result.success) return problems;
  for (const issue of result.error.issues) {
    const { message, param } = describeIssue(issue);
    const key = topLevelParam(param);
    if (!problems.has(key)) problems.set(key, message);
  }
  return problems;
}
