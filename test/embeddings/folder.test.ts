/**
 * embeddings/folder.ts: the page's reader of an embedding folder's JSON files gives what Node's
 * reader of the same folder gives (the files the vectors' tests run on), and follows only
 * modules.json paths inside the folder (modules.json is data from the folder).
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readEmbeddingFolderJson } from '../../src/embeddings/folder.js';
import { readEmbeddingModelDir } from '../../src/runtime/node/embedding-engine.js';
import { REPO_ROOT } from '../helpers/model.js';

const FIXTURES = join(REPO_ROOT, 'test/fixtures/embeddings');

describe('readEmbeddingFolderJson', () => {
  it.each(['bert-wordpiece', 'qwen3-decoder', 'xlmr-unigram', 'modernbert-bpe'])('reads %s as Node reads it', async (name) => {
    const dir = join(FIXTURES, name);
    const read = async (path: string) => {
      try {
        return JSON.parse(await readFile(join(dir, path), 'utf8')) as Record<string, unknown>;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
        throw error;
      }
    };
    const { onnx: _onnx, onnxFile: _file, ...node } = await readEmbeddingModelDir(dir, {});
    const page = await readEmbeddingFolderJson(read);
    expect(page).toEqual(node);
    expect(Object.keys(page.moduleConfigs ?? {})).toContain('1_Pooling');
  });

  it('follows only module paths inside the folder, and requires config.json and tokenizer.json', async () => {
    const asked: string[] = [];
    const files: Record<string, unknown> = {
      'config.json': { model_type: 'bert' },
      'tokenizer.json': {},
      'modules.json': [{ path: '' }, { path: '1_Pooling' }, { path: '../secrets' }, { path: '/etc' }, { path: 'a/../../b' }, { path: 'x\\..\\y' }, { path: 7 }, null],
      '1_Pooling/config.json': { pooling_mode: 'mean' },
    };
    const read = async (path: string) => {
      asked.push(path);
      return files[path] as Record<string, unknown> | undefined;
    };
    const read1 = await readEmbeddingFolderJson(read);
    expect(read1.moduleConfigs).toEqual({ '1_Pooling': { pooling_mode: 'mean' } });
    expect(asked.filter((path) => path.endsWith('/config.json'))).toEqual(['1_Pooling/config.json']);
    await expect(readEmbeddingFolderJson(async (path) => (path === 'config.json' ? undefined : (files[path] as Record<string, unknown>)), 'the folder')).rejects.toThrow('the folder has no config.json.');
    await expect(readEmbeddingFolderJson(async (path) => (path === 'tokenizer.json' ? undefined : (files[path] as Record<string, unknown>)))).rejects.toThrow(/no tokenizer\.json/);
  });
});
