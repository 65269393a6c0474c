import type { AdapterInfo, EngineAdapters, ModelInfo } from '../../engine/types.js';
import { modelNotFound } from '../errors.js';
import { randomId, unixSeconds } from '../ids.js';

/** vLLM 0.6's ModelCard, as /v1/models lists it. */
export interface ModelCard {
  id: string;
  object: 'model';
  created: number;
  owned_by: string;
  root: string;
  parent: string | null;
  max_model_len: number;
  permission: ModelPermission[];
}

interface ModelPermission {
  id: string;
  object: 'model_permission';
  created: number;
  allow_create_engine: boolean;
  allow_sampling: boolean;
  allow_logprobs: boolean;
  allow_search_indices: boolean;
  allow_view: boolean;
  allow_fine_tuning: boolean;
  organization: string;
  group: string | null;
  is_blocking: boolean;
}

/**
 * `maxModelLen`: the context length served, which the server config may set below the
 * model's. LoRA adapters follow the base model, as vLLM lists them: `root` is where the
 * adapter was loaded from, `parent` the base model's id.
 */
export function listModels(info: ModelInfo, maxModelLen: number, adapters: readonly AdapterInfo[] = []): { object: 'list'; data: ModelCard[] } {
  const created = unixSeconds();
  const cards = [
    modelCard(info.id, info.id, null, maxModelLen, created),
    ...adapters.map((adapter) => modelCard(adapter.name, adapter.path, info.id, maxModelLen, created)),
  ];
  return { object: 'list', data: cards };
}

/** GET /v1/models/{id}: the card of the served model or one of its adapters; any other id is vLLM's 404. */
export function retrieveModel(id: string, info: ModelInfo, maxModelLen: number, adapters: readonly AdapterInfo[] = []): ModelCard {
  const found = listModels(info, maxModelLen, adapters).data.find((card) => card.id === id);
  if (found === undefined) throw modelNotFound(id);
  return found;
}

function modelCard(id: string, root: string, parent: string | null, maxModelLen: number, created: number): ModelCard {
  return {
    id,
    object: 'model',
    created,
    owned_by: 'vllm',
    root,
    parent,
    max_model_len: maxModelLen,
    permission: [
      {
        id: randomId('modelperm'),
        object: 'model_permission',
        created,
        allow_create_engine: false,
        allow_sampling: true,
        allow_logprobs: true,
        allow_search_indices: false,
        allow_view: true,
        allow_fine_tuning: false,
        organization: '*',
        group: null,
        is_blocking: false,
      },
    ],
  };
}

/**
 * Refuses a request that names a model this server does not serve (vLLM's
 * _check_model). An absent name means the served one. Returns the LoRA adapter the
 * name selects, if it names one.
 */
export function checkModel(requested: string | null | undefined, info: ModelInfo, adapters?: EngineAdapters): string | undefined {
  if (requested === undefined || requested === null || requested === info.id) return undefined;
  if (adapters?.has(requested)) return requested;
  throw modelNotFound(requested);
}
