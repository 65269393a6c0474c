/** Readers for preprocessor_config.json / processor_config.json fields, with startup errors that name the field. */
import { PIL_FILTERS, type PilFilterName } from './pil-resample.js';

export type JsonObject = Record<string, unknown>;

export function configError(file: string, message: string): Error {
  return new Error(`${file}: ${message}`);
}

export function boolField(config: JsonObject, key: string, fallback: boolean): boolean {
  const value = config[key];
  return typeof value === 'boolean' ? value : fallback;
}

export function numberField(config: JsonObject, key: string, fallback: number | undefined, file: string): number {
  const value = config[key] ?? fallback;
  if (typeof value !== 'number' || !Number.isFinite(value)) throw configError(file, `"${key}" must be a number, got ${JSON.stringify(value)}`);
  return value;
}

export function positiveIntField(config: JsonObject, key: string, fallback: number | undefined, file: string): number {
  const value = numberField(config, key, fallback, file);
  if (!Number.isInteger(value) || value <= 0) throw configError(file, `"${key}" must be a positive integer, got ${value}`);
  return value;
}

/** {"longest_edge": n} / {"shortest_edge": n} / {"height": h, "width": w} size objects. */
export function sizeField(config: JsonObject, key: string, field: string, fallback: number | undefined, file: string): number {
  const size = config[key];
  const value = size !== null && typeof size === 'object' ? (size as JsonObject)[field] : undefined;
  if (value === undefined && fallback !== undefined) return fallback;
  if (typeof value !== 'number' || !Number.isInteger(value) || value <= 0) {
    throw configError(file, `"${key}.${field}" must be a positive integer, got ${JSON.stringify(value)}`);
  }
  return value;
}

export function channelsField(config: JsonObject, key: string, fallback: readonly number[], file: string): number[] {
  const value = config[key] ?? fallback;
  const list = typeof value === 'number' ? [value, value, value] : value;
  if (!Array.isArray(list) || list.length !== 3 || !list.every((v) => typeof v === 'number' && Number.isFinite(v))) {
    throw configError(file, `"${key}" must be three numbers (RGB), got ${JSON.stringify(value)}`);
  }
  return list as number[];
}

export function resampleField(config: JsonObject, fallback: keyof typeof PIL_FILTERS, file: string): PilFilterName {
  const value = config.resample ?? fallback;
  const name = PIL_FILTERS[value as keyof typeof PIL_FILTERS];
  if (name === undefined) {
    throw configError(file, `"resample" ${JSON.stringify(value)} is not supported (1 lanczos, 2 bilinear, 3 bicubic, 4 box, 5 hamming; 0 nearest is not).`);
  }
  return name;
}

/** The id of a token that must be one piece of the vocabulary; a startup error naming it otherwise. */
export function tokenIdOf(tokenToId: (token: string) => number | undefined, token: string, family: string): number {
  const id = tokenToId(token);
  if (id === undefined) throw new Error(`The ${family} processor needs the token "${token}", which tokenizer.json does not have as one token.`);
  return id;
}
