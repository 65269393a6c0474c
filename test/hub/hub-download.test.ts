/**
 * Models by Hugging Face id, against a local server speaking the Hub's HTTP API
 * (hub-server.ts), which is first checked against @huggingface/hub itself: fetch only what
 * the variant needs, into the Hugging Face cache layout (checked with the library's own cache
 * scanner), resume a cut download, serve offline from the cache, and one-line errors for a
 * gated or missing repo.
 */
import { mkdtempSync, readFileSync, readlinkSync, existsSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHash } from 'node:crypto';
import { downloadFile, fileDownloadInfo, listFiles, modelInfo, scanCacheDir } from '@huggingface/hub';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseHubModelRef } from '../../src/runtime/node/hub/model-ref.js';
import { resolveHubModel, type HubSettings } from '../../src/runtime/node/hub/download.js';
import { commitOf, startTestHub, type TestHub } from './hub-server.js';
import { GATED_REPO, GGUF_REPO, ONNX_REPO } from './fixtures.js';

const REPOS = { 'test-org/tiny-onnx': ONNX_REPO, 'test-org/tiny-gguf': GGUF_REPO, 'test-org/gated': GATED_REPO };
let hub: TestHub;
beforeAll(async () => {
  hub = await startTestHub(REPOS);
});
afterAll(async () => {
  await hub.close();
});

const freshCache = (): HubSettings => ({ endpoint: hub.url, offline: false, cacheDir: mkdtempSync(join(tmpdir(), 'edge-llm-hf-')) });
const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');
const resolvedPaths = (since: number) =>
  hub.requests
    .slice(since)
    .filter((r) => r.method === 'GET' && (r.path.includes('/resolve/') || r.path.startsWith('/storage/')))
    .map((r) => r.path);

describe('the test Hub, as @huggingface/hub sees it', () => {
  it('answers model info, the paginated tree, file info and downloads as the library expects', async () => {
    const info = await modelInfo({ name: 'test-org/tiny-onnx', hubUrl: hub.url, additionalFields: ['sha'] });
    expect((info as { sha?: string }).sha).toBe(commitOf('test-org/tiny-onnx', ONNX_REPO));
    const paths: string[] = [];
    for await (const entry of listFiles({ repo: 'test-org/tiny-onnx', hubUrl: hub.url, recursive: true })) if (entry.type === 'file') paths.push(entry.path);
    expect(paths.sort()).toEqual(Object.keys(ONNX_REPO.files).sort());
    // A large (LFS) file: its size and sha256 through the redirect, and its bytes.
    const large = await fileDownloadInfo({ repo: 'test-org/tiny-onnx', path: 'onnx/model.onnx', hubUrl: hub.url });
    expect(large?.size).toBe(ONNX_REPO.files['onnx/model.onnx']!.byteLength);
    const blob = await downloadFile({ repo: 'test-org/tiny-onnx', path: 'config.json', hubUrl: hub.url });
    expect(new Uint8Array(await blob!.arrayBuffer())).toEqual(ONNX_REPO.files['config.json']);
    expect(await fileDownloadInfo({ repo: 'test-org/tiny-onnx', path: 'nope.json', hubUrl: hub.url })).toBeNull();
  });

  it('gates a repo behind a token and says a missing repo is not found', async () => {
    await expect(modelInfo({ name: 'test-org/gated', hubUrl: hub.url })).rejects.toMatchObject({ statusCode: 401 });
    expect((await modelInfo({ name: 'test-org/gated', hubUrl: hub.url, accessToken: 'hf_good_token' })).name).toBe('test-org/gated');
    await expect(modelInfo({ name: 'test-org/none', hubUrl: hub.url })).rejects.toThrow(/Repository not found/);
  });
});

describe('resolveHubModel', () => {
  it('reads the references users type', () => {
    expect(parseHubModelRef('onnx-community/SmolLM2-135M-Instruct')).toEqual({ repo: 'onnx-community/SmolLM2-135M-Instruct' });
    expect(parseHubModelRef('bartowski/Qwen2.5-0.5B-Instruct-GGUF:Q4_K_M')).toEqual({ repo: 'bartowski/Qwen2.5-0.5B-Instruct-GGUF', quant: 'Q4_K_M' });
    expect(parseHubModelRef('hf.co/owner/repo:Q8_0')).toEqual({ repo: 'owner/repo', quant: 'Q8_0' });
    expect(parseHubModelRef('owner/repo/sub/file.gguf')).toEqual({ repo: 'owner/repo', file: 'sub/file.gguf' });
    expect(parseHubModelRef('/abs/path')).toBeNull();
    expect(parseHubModelRef('model.gguf')).toBeNull();
    expect(parseHubModelRef('owner/repo/../x')).toBeNull();
  });

  it('fetches only the chosen ONNX variant into the Hugging Face cache layout', async () => {
    const settings = freshCache();
    const since = hub.requests.length;
    const resolved = await resolveHubModel({ repo: 'test-org/tiny-onnx' }, settings, { dtype: 'fp32' });
    const commit = commitOf('test-org/tiny-onnx', ONNX_REPO);
    const folder = join(settings.cacheDir, 'models--test-org--tiny-onnx');
    expect(resolved.path).toBe(join(folder, 'snapshots', commit));
    expect(readFileSync(join(folder, 'refs', 'main'), 'utf8')).toBe(commit);
    const fetched = resolvedPaths(since);
    expect(fetched.some((p) => p.includes('model_q4') || p.includes('model_fp16'))).toBe(false);
    expect(resolved.files.sort()).toEqual(['config.json', 'generation_config.json', 'onnx/model.onnx', 'tokenizer.json', 'tokenizer_config.json']);
    // Large files are named by their sha256, small ones by their git blob id; snapshots link to them relatively.
    const graph = ONNX_REPO.files['onnx/model.onnx']!;
    expect(readlinkSync(join(resolved.path, 'onnx/model.onnx'))).toBe(`../../../blobs/${sha256(graph)}`);
    expect(sha256(readFileSync(join(resolved.path, 'onnx/model.onnx')))).toBe(sha256(graph));
    // The library's own cache scanner reads the layout: one repo, one revision at the commit, refs main.
    const scan = await scanCacheDir(settings.cacheDir);
    expect(scan.repos).toHaveLength(1);
    expect(scan.repos[0]!.id.name).toBe('test-org/tiny-onnx');
    const revision = [...scan.repos[0]!.revisions][0]!;
    expect(revision.commitOid).toBe(commit);
    expect([...revision.refs]).toEqual(['main']);
    // Again: everything is in the cache, nothing is fetched; offline, the Hub is not asked at all.
    const again = hub.requests.length;
    await resolveHubModel({ repo: 'test-org/tiny-onnx' }, settings, { dtype: 'fp32' });
    expect(resolvedPaths(again)).toEqual([]);
    const offlineSince = hub.requests.length;
    expect((await resolveHubModel({ repo: 'test-org/tiny-onnx' }, { ...settings, offline: true }, { dtype: 'fp32' })).path).toBe(resolved.path);
    expect(hub.requests.length).toBe(offlineSince);
    // A variant the cache does not hold is not served from it.
    await expect(resolveHubModel({ repo: 'test-org/tiny-onnx' }, { ...settings, offline: true }, { dtype: 'q4' })).rejects.toThrow(/was not downloaded/);
  });

  it('fetches the one .gguf of owner/repo:QUANT, and owner/repo/file', async () => {
    const settings = freshCache();
    const since = hub.requests.length;
    const resolved = await resolveHubModel({ repo: 'test-org/tiny-gguf', quant: 'q4_k_m' }, settings);
    expect(resolved.path.endsWith('tiny-llama-Q4_K_M.gguf')).toBe(true);
    expect(resolved.files).toEqual(['tiny-llama-Q4_K_M.gguf']);
    expect(resolvedPaths(since).filter((p) => p.includes('/resolve/'))).toEqual([]);
    expect(statSync(resolved.path).size).toBe(GGUF_REPO.files['tiny-llama-Q4_K_M.gguf']!.byteLength);
    expect((await resolveHubModel({ repo: 'test-org/tiny-gguf', quant: 'Q4_K' }, settings)).files).toEqual(['tiny-llama-Q4_K.gguf']);
    expect((await resolveHubModel({ repo: 'test-org/tiny-gguf', file: 'tiny-llama-Q8_0.gguf' }, settings)).files).toEqual(['tiny-llama-Q8_0.gguf']);
    await expect(resolveHubModel({ repo: 'test-org/tiny-gguf', quant: 'Q2_K' }, settings)).rejects.toThrow(
      'the Hugging Face repo test-org/tiny-gguf:Q2_K has no .gguf file for Q2_K (its .gguf files: tiny-llama-Q4_K.gguf, tiny-llama-Q4_K_M.gguf, tiny-llama-Q8_0.gguf).',
    );
  });

  it('resumes a cut download with a Range request', async () => {
    const settings = freshCache();
    hub.cutNextDownload('tiny-llama-Q4_K_M.gguf');
    await expect(resolveHubModel({ repo: 'test-org/tiny-gguf', quant: 'Q4_K_M' }, settings)).rejects.toThrow();
    const bytes = GGUF_REPO.files['tiny-llama-Q4_K_M.gguf']!;
    const partial = join(settings.cacheDir, 'models--test-org--tiny-gguf', 'blobs', `${sha256(bytes)}.incomplete`);
    const had = statSync(partial).size;
    expect(had).toBeGreaterThan(0);
    expect(had).toBeLessThan(bytes.byteLength);
    const since = hub.requests.length;
    const resolved = await resolveHubModel({ repo: 'test-org/tiny-gguf', quant: 'Q4_K_M' }, settings);
    expect(hub.requests.slice(since).find((r) => r.path.startsWith('/storage/'))?.range).toBe(`bytes=${had}-`);
    expect(sha256(readFileSync(resolved.path))).toBe(sha256(bytes));
    expect(existsSync(partial)).toBe(false);
  });

  it('serves offline from the cache, and says what was not downloaded', async () => {
    const settings = freshCache();
    const online = await resolveHubModel({ repo: 'test-org/tiny-gguf', quant: 'Q4_K_M' }, settings);
    const since = hub.requests.length;
    const offline = await resolveHubModel({ repo: 'test-org/tiny-gguf', quant: 'Q4_K_M' }, { ...settings, offline: true });
    expect(offline.path).toBe(online.path);
    expect(hub.requests.length).toBe(since);
    await expect(resolveHubModel({ repo: 'test-org/tiny-onnx' }, { ...settings, offline: true })).rejects.toThrow(
      /^The model test-org\/tiny-onnx was not downloaded: HF_HUB_OFFLINE is set and the Hugging Face cache \(.*\) holds no main of it \(run `edge-llm pull test-org\/tiny-onnx` while online\)\.$/,
    );
    await expect(resolveHubModel({ repo: 'test-org/tiny-gguf', quant: 'Q8_0' }, { ...settings, offline: true })).rejects.toThrow(/was not downloaded/);
  });

  it('says in one line that a repo is gated or missing', async () => {
    const settings = freshCache();
    await expect(resolveHubModel({ repo: 'test-org/gated' }, settings)).rejects.toThrow(
      'The Hugging Face repo test-org/gated is gated or private: set HF_TOKEN to a token with access (and accept its terms on its page).',
    );
    await expect(resolveHubModel({ repo: 'test-org/gated' }, { ...settings, token: 'hf_wrong' })).rejects.toThrow(/HF_TOKEN has no access/);
    await expect(resolveHubModel({ repo: 'test-org/missing' }, settings)).rejects.toThrow(
      `The Hugging Face repo test-org/missing does not exist (or is private: set HF_TOKEN) at ${hub.url}.`,
    );
    await expect(resolveHubModel({ repo: 'test-org/tiny-gguf', quant: 'Q4_K_M' }, settings, { revision: 'v9' })).rejects.toThrow(
      'The Hugging Face repo test-org/tiny-gguf has no revision "v9".',
    );
  });
});
