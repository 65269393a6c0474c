/**
 * Bounds on the lists and maps of a request (issue 41, family 3): 1.9 M stop_token_ids with
 * n = 32 froze the loop 16.7 s and took 1.6 GB. Two checks:
 *
 * - before the schema runs, on the body as parsed from JSON: the values in every list and map
 *   outside the prompt (stop, stop_token_ids, logit_bias, tools, documents, messages and their
 *   parts, chat_template_kwargs, guided_choice...) add up to at most maxRequestListItems, so a
 *   body of millions of small values is refused before the schema walks it value by value;
 * - after the schema, on the values the server would act on: each list is counted after
 *   de-duplication (a request repeating one stop id a million times asks for one id), and
 *   each has its own bound.
 *
 * The prompt is left out of the total: token-id prompts are bounded by the context (checked
 * before any model work) and text by maxPromptChars.
 */
import type { RequestBounds } from '../config/bound-settings.js';
import { invalidRequest } from '../common/protocol-error.js';

/** Fields whose size other bounds already judge: the prompt (context, maxPromptChars). */
const UNCOUNTED_FIELDS = new Set(['prompt']);

/**
 * Refuses a body holding more than maxRequestListItems values in its lists and maps (outside
 * the prompt). Cheap: it stops at the first value past the bound.
 */
export function checkBodyListItems(body: unknown, bounds: RequestBounds): void {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return;
  const limit = bounds.maxRequestListItems;
  let items = 0;
  let worst = '';
  let worstItems = 0;
  for (const [field, value] of Object.entries(body as Record<string, unknown>)) {
    if (UNCOUNTED_FIELDS.has(field) || value === null || typeof value !== 'object') continue;
    const fieldItems = countItems(value, limit - items + 1);
    items += fieldItems;
    if (fieldItems > worstItems) [worst, worstItems] = [field, fieldItems];
    if (items > limit) {
      throw invalidRequest(
        `A request may hold at most ${limit} values in its lists and maps outside the prompt (maxRequestListItems); this one holds more (${worst}: ${worstItems > limit ? `more than ${limit}` : worstItems}).`,
        worst,
      );
    }
  }
}

/** Values in a JSON value's lists and maps, stopping once past `limit`. */
function countItems(value: unknown, limit: number): number {
  let count = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && count <= limit) {
    const item = stack.pop();
    if (item === null || typeof item !== 'object') continue;
    const inner = Array.isArray(item) ? item : Object.values(item as Record<string, unknown>);
    count += inner.length;
    for (const child of inner) if (child !== null && typeof child === 'object') stack.push(child);
  }
  return count;
}

/** The fields the per-list bounds read, as the schemas output them. */
export interface BoundedLists {
  stop?: readonly string[];
  stop_token_ids?: readonly number[];
  logit_bias?: ReadonlyMap<number, number> | Record<string, number>;
  tools?: readonly unknown[];
}

function distinctCount(values: Iterable<unknown>): number {
  return new Set(values).size;
}

/**
 * Each list a request sends, counted after de-duplication: stop strings (maxStopStrings),
 * stop_token_ids (maxStopTokenIds), logit_bias entries (maxLogitBiasEntries), tools
 * (maxTools, OpenAI's own limit is 128).
 */
export function checkListBounds(request: BoundedLists, bounds: RequestBounds): void {
  const stop = request.stop ?? [];
  if (stop.length > bounds.maxStopStrings) {
    const distinct = distinctCount(stop);
    if (distinct > bounds.maxStopStrings) {
      throw invalidRequest(`stop must have at most ${bounds.maxStopStrings} strings (maxStopStrings), got ${distinct}.`, 'stop');
    }
  }
  const ids = request.stop_token_ids ?? [];
  if (ids.length > bounds.maxStopTokenIds) {
    const distinct = distinctCount(ids);
    if (distinct > bounds.maxStopTokenIds) {
      throw invalidRequest(
        `stop_token_ids must have at most ${bounds.maxStopTokenIds} distinct token ids (maxStopTokenIds), got ${distinct}.`,
        'stop_token_ids',
      );
    }
  }
  const bias = request.logit_bias;
  const biasEntries = bias === undefined ? 0 : bias instanceof Map ? bias.size : Object.keys(bias).length;
  if (biasEntries > bounds.maxLogitBiasEntries) {
    throw invalidRequest(
      `logit_bias must have at most ${bounds.maxLogitBiasEntries} entries (maxLogitBiasEntries), got ${biasEntries}.`,
      'logit_bias',
    );
  }
  const tools = request.tools ?? [];
  if (tools.length > bounds.maxTools) {
    throw invalidRequest(`tools must have at most ${bounds.maxTools} tools (maxTools), got ${tools.length}.`, 'tools');
  }
}

/** A list without its repeats, in first-seen order (the same array when it has none). */
export function withoutRepeats<T>(list: readonly T[]): T[] {
  const distinct = [...new Set(list)];
  return distinct.length === list.length ? (list as T[]) : distinct;
}
