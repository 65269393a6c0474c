import type { GuideFactory } from '../../guided/guide.js';
import type { GuidedLimits } from '../../guided/limits.js';
import { guidedDecodingFields } from '../../protocol/openai-common.js';
import { invalidRequest } from '../../common/protocol-error.js';
import type { ChatCompletionRequest } from '../../protocol/openai-chat.js';
import type { ToolCallParserName } from '../../tools/parsers/index.js';
import { ToolChoiceError, toolCalling, type ToolCalling } from '../../tools/tool-choice.js';
import type { GuideCompiler } from '../guided-decoding.js';

/**
 * Tool calling in the serving layer: how the request's tool_choice is served (see
 * src/tools/tool-choice.ts) and, for a named tool or "required", the grammar that
 * constrains the output to the calls. Refusals are 400s on `tool_choice`.
 */
export function requestToolCalling(request: ChatCompletionRequest, parser: ToolCallParserName | undefined): ToolCalling | null {
  try {
    return toolCalling(request, parser);
  } catch (error) {
    if (error instanceof ToolChoiceError) throw invalidRequest(error.message, 'tool_choice');
    throw error;
  }
}

function describeChoice(request: ChatCompletionRequest): string {
  const choice = request.tool_choice;
  return typeof choice === 'object' ? `a named tool_choice ("${choice.function.name}")` : `tool_choice "${choice}"`;
}

/** The grammar for tool calls made through structured output. */
export async function toolCallGuide(
  compile: GuideCompiler | null,
  request: ChatCompletionRequest,
  calling: ToolCalling & { schema: Record<string, unknown> },
  limits?: GuidedLimits,
  client?: string,
): Promise<GuideFactory> {
  const other = guidedDecodingFields(request)[0];
  if (other !== undefined) {
    throw invalidRequest(`${describeChoice(request)} constrains the output to tool calls; it cannot be combined with ${other}.`, 'tool_choice');
  }
  if (compile === null) {
    throw invalidRequest(`${describeChoice(request)} is served through structured output, which is not available in this runtime.`, 'tool_choice');
  }
  return compile({ kind: 'json', schema: calling.schema, param: 'tools' }, limits, client);
}
