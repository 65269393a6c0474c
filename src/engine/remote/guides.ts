/**
 * Structured output for a RemoteEngine: the constraint is not compiled here but sent to
 * the upstream, which enforces it with its own grammar engine (vLLM's guided decoding,
 * llama.cpp's json_schema / grammar). The request is still checked at the edge by the
 * serving layer (one kind at a time, well-formed fields) before it gets here.
 */
import type { GuideFactory } from '../../guided/guide.js';
import type { GuidedDecodingRequest } from '../../guided/request.js';

/** A GuideFactory that only carries the request: RemoteEngine forwards it and never creates a guide. */
export function forwardedGuide(request: GuidedDecodingRequest): GuideFactory {
  return {
    request,
    createGuide() {
      throw new Error('A forwarded guide is enforced by the upstream, not here.');
    },
  };
}

/** The serving layer's GuideCompiler for a RemoteEngine. */
export const forwardingGuideCompiler = async (request: GuidedDecodingRequest): Promise<GuideFactory> => forwardedGuide(request);

/** The request's constraint in vLLM's field names, as RemoteEngine's body carries it. */
export function guidedFields(request: GuidedDecodingRequest): Record<string, unknown> {
  switch (request.kind) {
    case 'json':
      return { guided_json: request.schema };
    case 'json_object':
      return { response_format: { type: 'json_object' } };
    case 'regex':
      return { guided_regex: request.pattern };
    case 'choice':
      return { guided_choice: request.choices };
  }
}
