/**
 * Docs that run: every shell block of README.md and docs/*.md that talks to a server is run
 * here against `npm start`'s server (the embedded model, on a free port; the documented
 * http://127.0.0.1:8080 is rewritten to it), or is marked as needing what CI lacks. A block
 * that names a server env (`VAR=value npm start`, or env="..." in its marker) gets a server
 * of its own, started once per distinct env. Each curl's answer is checked: its HTTP status
 * (2xx unless the marker says otherwise) and its shape (JSON that parses, with the fields its
 * endpoint answers with; SSE whose events parse and, on /v1/*, end with [DONE]).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { spawnServer, type RunningServer } from '../e2e/spawn-server.js';
import { docBlocks, docFiles, REPO_ROOT, splitServerStart, talksToServer, type DocBlock } from './doc-blocks.js';

const DOCUMENTED_ORIGIN = /http:\/\/(?:127\.0\.0\.1|localhost):8080/g;

const scratch = mkdtempSync(join(tmpdir(), 'edge-llm-doc-blocks-'));
/** Servers by their env; each block that needs one starts it or reuses it. */
const servers = new Map<string, Promise<RunningServer>>();

/** Every server listens on loopback and a free port, whatever the block says (HOST=0.0.0.0 included); GGUF graphs go to this run's scratch folder. */
function serverEnv(env: Record<string, string>): Record<string, string> {
  const resolved = Object.fromEntries(Object.entries(env).map(([name, value]) => [name, value.replaceAll('$PWD', REPO_ROOT)]));
  return { GGUF_CACHE_DIR: join(scratch, 'gguf'), ...resolved, HOST: '127.0.0.1', PORT: '0' };
}

const serverKey = (env: Record<string, string>) => JSON.stringify(Object.entries(serverEnv(env)).sort());

function serverFor(env: Record<string, string>): Promise<RunningServer> {
  const key = serverKey(env);
  let server = servers.get(key);
  if (!server) {
    server = spawnServer(serverEnv(env));
    servers.set(key, server);
  }
  return server;
}

/** Blocks still to run per server env: a server no later block needs is stopped at once (the default one stays). */
const pendingBlocks = new Map<string, number>();

async function releaseServer(env: Record<string, string>): Promise<void> {
  const key = serverKey(env);
  const left = (pendingBlocks.get(key) ?? 1) - 1;
  pendingBlocks.set(key, left);
  if (left > 0 || key === serverKey({})) return;
  const server = servers.get(key);
  servers.delete(key);
  await (await server?.catch(() => undefined))?.stop();
}

afterAll(async () => {
  await Promise.all([...servers.values()].map(async (server) => (await server.catch(() => undefined))?.stop()));
  rmSync(scratch, { recursive: true, force: true });
});

/** Wraps curl so each call's status, headers and body land in files the test reads. */
const CURL_RECORDER = `
__doc_n=0
curl() {
  __doc_n=$((__doc_n + 1))
  local url=""
  for arg in "$@"; do case "$arg" in http://*|https://*) url="$arg";; esac; done
  printf '%s' "$url" > "$DOC_OUT/$__doc_n.url"
  command curl -sS --max-time 30 -o "$DOC_OUT/$__doc_n.body" -D "$DOC_OUT/$__doc_n.headers" -w '%{http_code}' "$@" > "$DOC_OUT/$__doc_n.status"
}
set -e
`;

interface CurlCall {
  url: string;
  status: number;
  contentType: string;
  body: string;
}

function runBash(script: string, out: string): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn('bash', ['-c', CURL_RECORDER + script], { cwd: REPO_ROOT, env: { ...process.env, DOC_OUT: out }, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
    child.on('exit', (code) => resolve({ code, stderr }));
  });
}

function calls(out: string): CurlCall[] {
  const count = readdirSync(out).filter((name) => name.endsWith('.url')).length;
  return Array.from({ length: count }, (_, i) => {
    const file = (ext: string) => join(out, `${i + 1}.${ext}`);
    let body = readFileSync(file('body'), 'utf8');
    // curl -i writes the headers into the body too.
    if (body.startsWith('HTTP/')) body = body.slice(body.indexOf('\r\n\r\n') + 4);
    const headers = readFileSync(file('headers'), 'utf8');
    return {
      url: readFileSync(file('url'), 'utf8'),
      status: Number(readFileSync(file('status'), 'utf8')),
      contentType: /^content-type:\s*(.*)$/im.exec(headers)?.[1]?.trim() ?? '',
      body,
    };
  });
}

/** The fields each endpoint's JSON answer carries. */
function expectJsonShape(call: CurlCall, json: Record<string, unknown>): void {
  const route = new URL(call.url).pathname;
  if (call.status >= 400) {
    expect(json, `${route}: an error body`).toMatchObject({ object: 'error', code: call.status, message: expect.any(String) });
    return;
  }
  if (route === '/generate') expect(json.text, '/generate: text[]').toEqual(expect.arrayContaining([expect.any(String)]));
  else if (route === '/v1/completions') {
    expect(json.object).toBe('text_completion');
    expect((json.choices as { text: unknown }[]).every((choice) => typeof choice.text === 'string')).toBe(true);
  } else if (route === '/v1/chat/completions') {
    expect(json.object).toBe('chat.completion');
    expect((json.choices as { message: { role: string } }[])[0]!.message.role).toBe('assistant');
  } else if (route === '/v1/models') expect(json.object).toBe('list');
  else if (route.startsWith('/v1/models/')) expect(json.object).toBe('model');
  else if (route === '/tokenize') expect(json.tokens).toEqual(expect.any(Array));
  else if (route === '/detokenize') expect(json.prompt).toEqual(expect.any(String));
}

function expectShape(call: CurlCall): void {
  const route = new URL(call.url).pathname;
  if (call.contentType.startsWith('application/json')) {
    expectJsonShape(call, JSON.parse(call.body) as Record<string, unknown>);
  } else if (call.contentType.startsWith('text/event-stream')) {
    const events = call.body
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => line.slice('data: '.length));
    expect(events.length, `${route}: events`).toBeGreaterThan(0);
    const chunks = events.filter((data) => data !== '[DONE]').map((data) => JSON.parse(data) as Record<string, unknown>);
    expect(chunks.some((chunk) => chunk.object === 'error'), `${route}: an error event`).toBe(false);
    if (route.startsWith('/v1/')) {
      expect(events.at(-1), `${route}: ends with [DONE]`).toBe('[DONE]');
      const object = route === '/v1/completions' ? 'text_completion' : 'chat.completion.chunk';
      expect(chunks.every((chunk) => chunk.object === object)).toBe(true);
    } else expect(chunks.every((chunk) => Array.isArray(chunk.text))).toBe(true);
  } else if (call.status === 200 && route !== '/health') {
    expect(call.body.length, `${route}: a body`).toBeGreaterThan(0);
  }
}

/** The env of the server a block runs against: its `npm start` line's, then its marker's. */
function blockEnv(block: DocBlock): Record<string, string> {
  const script = ['ts', 'js', 'mjs'].includes(block.info);
  return { ...(script ? {} : splitServerStart(block.code).env), ...block.marker!.env };
}

async function runShellBlock(block: DocBlock): Promise<void> {
  const { script, startsServer } = splitServerStart(block.code);
  const server = await serverFor(blockEnv(block));
  const out = mkdtempSync(join(scratch, 'block-'));
  const result = await runBash(script.replace(DOCUMENTED_ORIGIN, server.url), out);
  expect(result.code, `bash exited ${result.code}: ${result.stderr}\nserver output:\n${server.output().slice(-2000)}`).toBe(0);
  const made = calls(out);
  if (!startsServer) expect(made.length, 'a block that talks to a server makes a request').toBeGreaterThan(0);
  const expected = block.marker!.status;
  if (expected !== undefined && expected.length > 1) expect(made.length, 'one status per curl').toBe(expected.length);
  made.forEach((call, i) => {
    const status = expected?.[expected.length === 1 ? 0 : i];
    if (status === undefined) expect(call.status, `${call.url}: ${call.body.slice(0, 300)}`).toBeGreaterThanOrEqual(200);
    if (status === undefined) expect(call.status, `${call.url}: ${call.body.slice(0, 300)}`).toBeLessThan(300);
    else expect(String(call.status), `${call.url}: ${call.body.slice(0, 300)}`).toBe(status);
    expectShape(call);
  });
}

/** JavaScript / TypeScript snippets (written as plain JavaScript) run as ES modules from the repository. */
async function runScriptBlock(block: DocBlock): Promise<void> {
  const server = await serverFor(blockEnv(block));
  const code = block.code.replace(DOCUMENTED_ORIGIN, server.url);
  const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const child = spawn(process.execPath, ['--input-type=module', '-e', code], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (data: Buffer) => (stdout += data.toString()));
    child.stderr.on('data', (data: Buffer) => (stderr += data.toString()));
    child.on('exit', (exitCode) => resolve({ code: exitCode, stdout, stderr }));
  });
  expect(result.code, result.stderr).toBe(0);
  expect(result.stdout.trim().length, 'the snippet prints its answer').toBeGreaterThan(0);
}

const blocks = docFiles().flatMap(docBlocks);
const runnable = blocks.filter((block) => block.marker?.run);
const notRun = blocks.filter((block) => block.marker?.needs !== undefined);
for (const block of runnable) pendingBlocks.set(serverKey(blockEnv(block)), (pendingBlocks.get(serverKey(blockEnv(block))) ?? 0) + 1);

describe('docs that run', () => {
  it('marks every block that talks to a server: run, or needs="what CI lacks"', () => {
    const unmarked = blocks.filter((block) => talksToServer(block) && block.marker === undefined).map((block) => block.where);
    expect(unmarked).toEqual([]);
  });

  it(`counts the ${notRun.length} blocks CI cannot run, each with its reason`, () => {
    for (const block of notRun) console.log(`not run: ${block.where} needs ${block.marker!.needs}`);
    expect(notRun.every((block) => block.marker!.needs!.trim() !== '')).toBe(true);
    // Most of the book runs: a change that marks many blocks away shows here.
    expect(notRun.length).toBeLessThan(runnable.length);
  });

  runnable.forEach((block, i) => {
    const script = ['ts', 'js', 'mjs'].includes(block.info);
    const next = runnable[i + 1];
    it(`${block.where} runs`, { timeout: 90_000 }, async () => {
      // The next block's server starts while this one runs (at most one extra process at a time).
      if (next !== undefined) serverFor(blockEnv(next)).catch(() => undefined);
      try {
        await (script ? runScriptBlock(block) : runShellBlock(block));
      } finally {
        await releaseServer(blockEnv(block));
      }
    });
  });
});
