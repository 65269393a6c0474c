/**
 * Responses in the client's vocabulary where an upstream's differs. Only what the
 * client would otherwise misread is rewritten; everything else passes byte for byte.
 *
 *  - llama.cpp, /v1/completions with `logprobs`: llama.cpp answers in the chat shape
 *    (`logprobs.content: [{token, logprob, top_logprobs: [{token, logprob}]}]`); the
 *    completions API has the legacy shape (`tokens`, `token_logprobs`, `top_logprobs`
 *    as token → logprob maps, `text_offset`), which openai-node and vLLM use.
 */
import type { OpenAIRoute } from './dialects.js';
import type { UpstreamTarget } from './upstreams.js';

interface ChatLogprob {
  token?: unknown;
  logprob?: unknown;
  top_logprobs?: Array<{ token?: unknown; logprob?: unknown }>;
}

interface LegacyLogprobs {
  tokens: string[];
  token_logprobs: number[];
  top_logprobs: Array<Record<string, number>>;
  text_offset: number[];
}

/** The chat-shaped entries as the legacy shape; `offset` is where the first token starts in the choice's text. */
export function legacyLogprobs(content: readonly ChatLogprob[], offset: number): { logprobs: LegacyLogprobs; next: number } {
  const out: LegacyLogprobs = { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
  let at = offset;
  for (const entry of content) {
    const token = typeof entry.token === 'string' ? entry.token : '';
    out.tokens.push(token);
    out.token_logprobs.push(typeof entry.logprob === 'number' ? entry.logprob : Number.NaN);
    const top: Record<string, number> = {};
    for (const alternative of entry.top_logprobs ?? []) {
      if (typeof alternative.token === 'string' && typeof alternative.logprob === 'number') top[alternative.token] = alternative.logprob;
    }
    out.top_logprobs.push(top);
    out.text_offset.push(at);
    at += token.length;
  }
  return { logprobs: out, next: at };
}

interface Choice {
  index?: unknown;
  logprobs?: { content?: unknown } | null;
}

/** Rewrites the choices of one completion object in place; `offsets` carries each choice's text position across stream events. */
function rewriteChoices(object: { choices?: Choice[] }, offsets: Map<number, number>): boolean {
  let changed = false;
  for (const choice of object.choices ?? []) {
    const content = choice.logprobs?.content;
    if (!Array.isArray(content)) continue;
    const index = typeof choice.index === 'number' ? choice.index : 0;
    const { logprobs, next } = legacyLogprobs(content as ChatLogprob[], offsets.get(index) ?? 0);
    offsets.set(index, next);
    choice.logprobs = logprobs as unknown as Choice['logprobs'];
    changed = true;
  }
  return changed;
}

function needsTranslation(route: OpenAIRoute, target: Pick<UpstreamTarget, 'dialect'>): boolean {
  return route === 'completions' && target.dialect === 'llama.cpp';
}

/** `body` in the client's vocabulary (unchanged unless the upstream's dialect needs it). */
export function translateResponse(
  body: ReadableStream<Uint8Array>,
  contentType: string,
  route: OpenAIRoute,
  target: Pick<UpstreamTarget, 'dialect'>,
): ReadableStream<Uint8Array> {
  if (!needsTranslation(route, target)) return body;
  const offsets = new Map<number, number>();
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  if (!contentType.startsWith('text/event-stream')) {
    let text = '';
    return body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform(chunk) {
          text += decoder.decode(chunk, { stream: true });
        },
        flush(controller) {
          text += decoder.decode();
          try {
            const object = JSON.parse(text) as { choices?: Choice[] };
            if (rewriteChoices(object, offsets)) text = JSON.stringify(object);
          } catch {
            // Not JSON: passed on as it came.
          }
          controller.enqueue(encoder.encode(text));
        },
      }),
    );
  }
  let partial = '';
  const rewriteLine = (line: string): string => {
    if (!line.startsWith('data:') || !line.includes('"logprobs"')) return line;
    try {
      const object = JSON.parse(line.slice(5)) as { choices?: Choice[] };
      return rewriteChoices(object, offsets) ? `data: ${JSON.stringify(object)}` : line;
    } catch {
      return line;
    }
  };
  return body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        // Only the new text is searched for a line end (re-splitting a long open line on every chunk was quadratic).
        const text = decoder.decode(chunk, { stream: true });
        if (!text.includes('\n')) {
          partial += text;
          return;
        }
        const lines = text.split('\n');
        lines[0] = partial + lines[0];
        partial = lines.pop() ?? '';
        if (lines.length > 0) controller.enqueue(encoder.encode(`${lines.map(rewriteLine).join('\n')}\n`));
      },
      flush(controller) {
        partial += decoder.decode();
        if (partial !== '') controller.enqueue(encoder.encode(rewriteLine(partial)));
      },
    }),
  );
}
