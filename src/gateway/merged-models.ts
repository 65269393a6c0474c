/**
 * /v1/models for the whole fleet: one card per client-facing model, in configuration
 * order, with what the first upstream serving it reports (its context length); a model
 * whose upstreams are all unreachable is still listed, from the configuration alone.
 * Cards are vLLM's shape whatever the upstream's (llama.cpp's carries `meta.n_ctx`).
 */
import type { UpstreamPool } from './upstream-pool.js';
import type { UpstreamTarget } from './upstreams.js';

interface ReportedModel {
  id?: unknown;
  owned_by?: unknown;
  max_model_len?: unknown;
  meta?: { n_ctx?: unknown; n_ctx_train?: unknown };
}

export interface MergedModelCard {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  root: string;
  parent: null;
  max_model_len?: number;
}

async function reported(pool: UpstreamPool, target: UpstreamTarget): Promise<ReportedModel | null> {
  try {
    const response = await pool.get(target, '/v1/models');
    if (!response.ok) {
      await response.body?.cancel();
      return null;
    }
    const data = ((await response.json()) as { data?: ReportedModel[] }).data;
    if (!Array.isArray(data)) return null;
    return data.find((m) => m.id === target.upstreamModel) ?? (data.length === 1 ? data[0] : null);
  } catch {
    return null;
  }
}

function contextLength(model: ReportedModel): number | undefined {
  const value = model.max_model_len ?? model.meta?.n_ctx ?? model.meta?.n_ctx_train;
  return typeof value === 'number' && value > 0 ? value : undefined;
}

export async function mergedModels(pool: UpstreamPool): Promise<{ object: 'list'; data: MergedModelCard[] }> {
  const created = Math.floor(Date.now() / 1000);
  const data = await Promise.all(
    pool.models().map(async (model): Promise<MergedModelCard> => {
      const card: MergedModelCard = { id: model, object: 'model', created, owned_by: 'vllm', root: model, parent: null };
      for (const target of pool.candidates(model)) {
        const found = await reported(pool, target);
        if (found === null) continue;
        if (typeof found.owned_by === 'string') card.owned_by = found.owned_by;
        const length = contextLength(found);
        if (length !== undefined) card.max_model_len = length;
        break;
      }
      return card;
    }),
  );
  return { object: 'list', data };
}
