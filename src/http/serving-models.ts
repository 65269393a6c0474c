import type { ModelInfo } from '../engine/types.js';
import { modelNotFound } from './errors.js';
import { randomId, unixSeconds } from './ids.js';

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

/** `maxModelLen`: the context length served, which the server config may set below the model's. */
export function listModels(info: ModelInfo, maxModelLen: number): { object: 'list'; data: ModelCard[] } {
  return { object: 'list', data: [modelCard(info, maxModelLen)] };
}

/** GET /v1/models/{id}: the card of the served model; any other id is vLLM's 404. */
export function retrieveModel(id: string, info: ModelInfo, maxModelLen: number): ModelCard {
  if (id !== info.id) throw modelNotFound(id);
  return modelCard(info, maxModelLen);
}

function modelCard(info: ModelInfo, maxModelLen: number): ModelCard {
  const created = unixSeconds();
  const card: ModelCard = {
    id: info.id,
    object: 'model',
    created,
    owned_by: 'vllm',
    root: info.id,
    parent: null,
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
  return card;
}

/**
 * Refuses a request that names a model this server does not serve (vLLM's
 * _check_model). An absent name means the served one.
 */
export function checkModel(requested: string | null | undefined, info: ModelInfo): void {
  if (requested === undefined || requested === null) return;
  if (requested !== info.id) throw modelNotFound(requested);
}
