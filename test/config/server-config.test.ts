import { describe, expect, it } from 'vitest';
import {
  DEFAULT_SERVER_CONFIG,
  configFromEnv,
  parseServerConfig,
  resolveServerConfig,
  schedulerLimitsOf,
} from '../../src/config/server-config.js';

function configError(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(Error);
    return (error as Error).message;
  }
  throw new Error('expected the configuration to be refused');
}

describe('server configuration', () => {
  it('has the documented defaults', () => {
    expect(DEFAULT_SERVER_CONFIG).toEqual({
      host: '127.0.0.1',
      port: 8080,
      modelDir: 'models/stories260k',
      runner: 'auto',
      servedModelName: 'stories260k',
      kvCacheMemoryBytes: 8 * 1024 ** 3,
      enablePrefixCaching: true,
      enableChunkedPrefill: true,
      longPrefillTokenThreshold: 0,
      enablePromptTokensDetails: false,
      maxInputTokenLen: 511,
      maxIterTimes: 512,
      fullTextEnabled: false,
      maxRunningSequences: 64,
      maxBatchedTokens: 8192,
      maxWaitingRequests: 256,
      waitingDeadlineMs: 30000,
      speculativeDecoding: 'guided',
      numSpeculativeTokens: 4,
      speculativeMaxSequences: 2,
      dataParallelSize: 1,
      intraOpNumThreads: 'auto',
      intraOpSpinning: true,
      modelThread: 'auto',
      requireJsonContentType: true,
      allowedHosts: null,
      logRequests: true,
      logPrompts: false,
      headersTimeoutMs: 10_000,
      requestTimeoutMs: 30_000,
      maxConnections: 1024,
      maxPipelinedRequests: 16,
      maxRequestBytesInFlight: 268435456,
      maxStreamUnreadBytes: 4 * 1024 * 1024,
      maxUnreadBytesTotal: 64 * 1024 * 1024,
      streamWriteTimeoutMs: 30_000,
      maxGuidedCompileQueue: 64,
      maxGuidedCompileQueuePerClient: 8,
      guidedCompileDeadlineMs: 10_000,
      guidedDecodingThreads: 2,
      templateThreads: 2,
      maxThreadQueue: 64,
      maxThreadQueuePerClient: 16,
      maxTokenizationMs: 20_000,
      keepAliveTimeoutMs: 5000,
      shutdownGraceMs: 5000,
      toolCallParser: undefined,
      reasoningParser: undefined,
      logprobsMode: 'raw_logprobs',
      trustRequestChatTemplate: false,
      corsAllowedOrigins: ['*'],
      corsAllowedMethods: ['*'],
      corsAllowedHeaders: ['*'],
      corsAllowCredentials: false,
      crossRequestBatching: true,
      maxRequestBytes: 16777216,
      maxSequencesPerRequest: 128,
      maxPromptChars: 4194304,
      maxEmbeddingInputs: 2048,
      maxStopStrings: 128,
      maxStopTokenIds: 1024,
      maxLogitBiasEntries: 1024,
      maxTools: 128,
      maxRequestListItems: 65536,
      maxStopChars: 32768,
      maxMessages: 1024,
      maxChatTemplateChars: 65536,
      maxChatTemplateSteps: 500000,
      maxChatTemplateMs: 10000,
      maxGuidedSourceChars: 65536,
      maxInlinePieceChars: 16384,
      maxGuidedNestingDepth: 64,
      maxGuidedProperties: 1024,
      maxGuidedRepetition: 1000,
      maxGrammarChars: 49152,
      maxGrammarWork: 2000000,
      maxRequestSlotPercent: 50,
      maxExtraSequenceSlotPercent: 50,
      maxLogprobEntries: 262144,
      loraModules: [],
      maxLoras: 4,
      maxCpuLoras: 16,
      maxLoraRank: 16,
      allowRuntimeLoraUpdating: false,
      loraRoot: null,
    });
  });

  it('reads the API key from API_KEY, else VLLM_API_KEY, and allowed hosts as a comma list', () => {
    expect(resolveServerConfig({ env: { VLLM_API_KEY: 'v-key' } }).apiKey).toBe('v-key');
    expect(resolveServerConfig({ env: { API_KEY: 'a-key', VLLM_API_KEY: 'v-key' } }).apiKey).toBe('a-key');
    expect(resolveServerConfig({ env: { API_KEY: '  ' } }).apiKey).toBeUndefined();
    expect(resolveServerConfig({ file: { apiKey: ['old', 'new'] } }).apiKey).toEqual(['old', 'new']);
    expect(resolveServerConfig({ env: { ALLOWED_HOSTS: 'llm.example.com, .internal ,' } }).allowedHosts).toEqual([
      'llm.example.com',
      '.internal',
    ]);
    expect(resolveServerConfig({ env: { LOG_REQUESTS: 'false' } }).logRequests).toBe(false);
    expect(configError(() => resolveServerConfig({ env: { LOG_REQUESTS: 'no' } }))).toMatch(/logRequests/);
    expect(configError(() => parseServerConfig({ apiKey: '' }))).toMatch(/apiKey/);
    expect(configError(() => parseServerConfig({ allowedHosts: 'localhost' }))).toMatch(/allowedHosts/);
  });

  it('takes a tool-call parser by name and CORS lists as lists or comma-separated text', () => {
    expect(parseServerConfig({ toolCallParser: 'pythonic' }).toolCallParser).toBe('pythonic');
    expect(() => parseServerConfig({ toolCallParser: 'qwen' })).toThrow(/toolCallParser must be one of "deepseek_v3", "glm45", "granite", "hermes", "kimi_k2", "llama3_json", "mistral", "pythonic", "qwen3_coder"/);
    expect(() => parseServerConfig({ reasoningParser: "qwq" })).toThrow(/reasoningParser must be one of "deepseek_r1", "deepseek_v3", "qwen3"/);
    expect(parseServerConfig({ reasoningParser: "qwen3" }).reasoningParser).toBe("qwen3");
    expect(resolveServerConfig({ env: { TOOL_CALL_PARSER: 'mistral' } }).toolCallParser).toBe('mistral');
    expect(resolveServerConfig({ env: { TRUST_REQUEST_CHAT_TEMPLATE: 'true' } }).trustRequestChatTemplate).toBe(true);
    expect(() => parseServerConfig({ trustRequestChatTemplate: 'yes' })).toThrow(/trustRequestChatTemplate must be true or false/);
    expect(parseServerConfig({ corsAllowedOrigins: 'https://a.example, https://b.example' }).corsAllowedOrigins).toEqual(['https://a.example', 'https://b.example']);
    expect(resolveServerConfig({ env: { CORS_ALLOWED_ORIGINS: 'https://a.example' } }).corsAllowedOrigins).toEqual(['https://a.example']);
    expect(parseServerConfig({ corsAllowedMethods: ['GET', 'POST'] }).corsAllowedMethods).toEqual(['GET', 'POST']);
  });

  it('reads every request bound from its environment variable, and refuses a bad one by name', () => {
    const config = resolveServerConfig({ env: { MAX_SEQUENCES_PER_REQUEST: '8', MAX_PROMPT_CHARS: '1000', MAX_GRAMMAR_CHARS: '2048' } });
    expect(config).toMatchObject({ maxSequencesPerRequest: 8, maxPromptChars: 1000, maxGrammarChars: 2048 });
    expect(configError(() => resolveServerConfig({ env: { MAX_STOP_STRINGS: 'many' } }))).toMatch(/maxStopStrings/);
    expect(configError(() => parseServerConfig({ maxGuidedNestingDepth: 0 }))).toMatch(/maxGuidedNestingDepth must be an integer >= 1/);
  });

  it('hands the scheduler its limits, speculative decoding included', () => {
    const config = parseServerConfig({ maxRunningSequences: 8, speculativeDecoding: 'all', numSpeculativeTokens: 3, speculativeMaxSequences: 1 });
    expect(schedulerLimitsOf(config)).toEqual({
      maxRunningSequences: 8,
      maxBatchedTokens: 8192,
      maxExtraSequenceSlotPercent: 50,
      maxWaitingRequests: 256,
      waitingDeadlineMs: 30000,
      speculativeDecoding: 'all',
      numSpeculativeTokens: 3,
      speculativeMaxSequences: 1,
      crossRequestBatching: true,
      maxSeqLen: null,
      kvCacheMemoryBytes: 8 * 1024 ** 3,
      enablePrefixCaching: true,
      enableChunkedPrefill: true,
      longPrefillTokenThreshold: 0,
      maxStreamUnreadBytes: 4 * 1024 * 1024,
      maxUnreadBytesTotal: 64 * 1024 * 1024,
    });
    expect(schedulerLimitsOf(parseServerConfig({ maxSeqLen: 1024 })).maxSeqLen).toBe(1024);
    expect(schedulerLimitsOf(parseServerConfig({ enablePrefixCaching: false })).enablePrefixCaching).toBe(false);
    expect(schedulerLimitsOf(parseServerConfig({ enableChunkedPrefill: false, longPrefillTokenThreshold: 64 }))).toMatchObject({ enableChunkedPrefill: false, longPrefillTokenThreshold: 64 });
    expect(configError(() => parseServerConfig({ longPrefillTokenThreshold: -1 }))).toMatch('longPrefillTokenThreshold must be an integer >= 0');
    // vLLM's --no-enable-chunked-prefill as an environment variable.
    expect(resolveServerConfig({ env: { ENABLE_CHUNKED_PREFILL: 'false', LONG_PREFILL_TOKEN_THRESHOLD: '64' } })).toMatchObject({ enableChunkedPrefill: false, longPrefillTokenThreshold: 64 });
    expect(configError(() => parseServerConfig({ numSpeculativeTokens: 0 }))).toMatch('numSpeculativeTokens must be an integer in [1, 64]');
    expect(configError(() => parseServerConfig({ speculativeDecoding: 'yes' }))).toMatch('speculativeDecoding must be "off", "guided" or "all"');
  });

  it('names the served model after the model directory unless told otherwise', () => {
    expect(parseServerConfig({ modelDir: '/opt/models/tiny-llama/' }).servedModelName).toBe('tiny-llama');
    expect(parseServerConfig({ modelDir: 'C:\\models\\qwen' }).servedModelName).toBe('qwen');
    expect(parseServerConfig({ modelDir: '/opt/x', servedModelName: 'custom' }).servedModelName).toBe('custom');
  });

  it('accepts boundary values', () => {
    expect(parseServerConfig({ port: 0 }).port).toBe(0);
    expect(parseServerConfig({ port: 65535, maxSeqLen: 2, maxInputTokenLen: 1, maxIterTimes: 1, maxWaitingRequests: 0 })).toMatchObject({
      port: 65535,
      maxSeqLen: 2,
      maxWaitingRequests: 0,
    });
  });

  it('lists every bad field in one error', () => {
    const message = configError(() =>
      parseServerConfig({ port: 70000, host: '', maxSeqLen: 'big', maxIterTimes: 0, fullTextEnabled: 'yes', maxBatchedTokens: 1.5, tpyo: 1 }),
    );
    expect(message).toMatch(/^Invalid server configuration:/);
    for (const expected of [
      'port must be an integer in [0, 65535], got 70000',
      'host must not be empty',
      'maxSeqLen must be an integer >= 2, got "big"',
      'maxIterTimes must be an integer >= 1, got 0',
      'fullTextEnabled must be true or false, got "yes"',
      'maxBatchedTokens must be an integer >= 1, got 1.5',
      'tpyo is not a known setting',
    ]) {
      expect(message).toContain(expected);
    }
  });

  it('refuses a configuration that is not an object', () => {
    expect(configError(() => parseServerConfig([1]))).toMatch(/must be a JSON object/);
    expect(configError(() => resolveServerConfig({ file: 'port=1' }))).toMatch(/JSON object/);
  });
});

describe('configuration precedence: defaults < file < environment', () => {
  it('maps the environment variables', () => {
    expect(configFromEnv({ HOST: '0.0.0.0', PORT: '9000', MODEL_DIR: '/m/x', SERVED_MODEL_NAME: 'x1', OTHER: 'y' })).toEqual({
      host: '0.0.0.0',
      port: 9000,
      modelDir: '/m/x',
      servedModelName: 'x1',
    });
    expect(configFromEnv({ HOST: '', PORT: '   ' })).toEqual({});
  });

  it('lets the file override defaults and the environment override the file', () => {
    const config = resolveServerConfig({
      file: { host: '10.0.0.1', port: 7000, maxSeqLen: 1024, maxIterTimes: 100 },
      env: { PORT: '7100' },
    });
    expect(config).toMatchObject({ host: '10.0.0.1', port: 7100, maxSeqLen: 1024, maxIterTimes: 100, maxInputTokenLen: 511 });
    // The context's knobs as environment variables (vLLM's --max-model-len, --kv-cache-memory-bytes).
    expect(resolveServerConfig({ file: { maxSeqLen: 1024 }, env: { MAX_SEQ_LEN: '4096', KV_CACHE_MEMORY_BYTES: '1073741824' } })).toMatchObject({
      maxSeqLen: 4096,
      kvCacheMemoryBytes: 1024 ** 3,
    });
    expect(DEFAULT_SERVER_CONFIG.maxSeqLen).toBeUndefined();
    // vLLM's --no-enable-prefix-caching and --enable-prompt-tokens-details as environment variables.
    expect(resolveServerConfig({ env: { ENABLE_PREFIX_CACHING: 'false', ENABLE_PROMPT_TOKENS_DETAILS: 'true' } })).toMatchObject({
      enablePrefixCaching: false,
      enablePromptTokensDetails: true,
    });
  });

  it('derives the served name from the winning modelDir', () => {
    expect(resolveServerConfig({ file: { modelDir: '/a/file-model' }, env: { MODEL_DIR: '/b/env-model' } }).servedModelName).toBe('env-model');
    expect(resolveServerConfig({}).servedModelName).toBe('stories260k');
  });

  it('reports a bad environment value against its setting', () => {
    expect(configError(() => resolveServerConfig({ env: { PORT: 'eighty' } }))).toContain('port must be an integer in [0, 65535], got "eighty"');
  });
});

describe('thread settings', () => {
  it('reads intraOpNumThreads and modelThread from the file and INTRA_OP_NUM_THREADS / MODEL_THREAD from the environment', () => {
    expect(resolveServerConfig({ file: { intraOpNumThreads: 2, modelThread: 'worker' } })).toMatchObject({ intraOpNumThreads: 2, modelThread: 'worker' });
    expect(resolveServerConfig({ file: { intraOpNumThreads: 2 }, env: { INTRA_OP_NUM_THREADS: '3', MODEL_THREAD: 'main' } })).toMatchObject({
      intraOpNumThreads: 3,
      modelThread: 'main',
    });
    expect(resolveServerConfig({ file: { intraOpNumThreads: 2 }, env: { INTRA_OP_NUM_THREADS: 'auto' } }).intraOpNumThreads).toBe('auto');
  });

  it('reads intraOpSpinning (on by default) from the file, INTRA_OP_SPINNING and --intra-op-spinning, and refuses a non-boolean', () => {
    expect(resolveServerConfig({}).intraOpSpinning).toBe(true);
    expect(resolveServerConfig({ file: { intraOpSpinning: false } }).intraOpSpinning).toBe(false);
    expect(resolveServerConfig({ file: { intraOpSpinning: false }, env: { INTRA_OP_SPINNING: 'true' } }).intraOpSpinning).toBe(true);
    expect(configError(() => parseServerConfig({ intraOpSpinning: 'yes' }))).toContain('intraOpSpinning must be true or false');
  });

  it('refuses a thread count or a model thread it does not know, naming the setting', () => {
    for (const bad of [0, 1.5, 257, 'two', -1]) {
      expect(configError(() => parseServerConfig({ intraOpNumThreads: bad }))).toContain('intraOpNumThreads must be "auto" or an integer in [1, 256]');
    }
    expect(configError(() => resolveServerConfig({ env: { INTRA_OP_NUM_THREADS: 'many' } }))).toContain(
      'intraOpNumThreads must be "auto" or an integer in [1, 256], got "many"',
    );
    expect(configError(() => resolveServerConfig({ env: { MODEL_THREAD: 'gpu' } }))).toContain('modelThread must be "auto", "main" or "worker", got "gpu"');
  });
});

describe('choosing the model variant', () => {
  it('reads dtype and modelFile from the file, MODEL_DTYPE and MODEL_FILE from the environment', () => {
    expect(resolveServerConfig({ file: { dtype: 'q4' } }).dtype).toBe('q4');
    expect(resolveServerConfig({ file: { dtype: 'q4' }, env: { MODEL_DTYPE: 'q4f16' } }).dtype).toBe('q4f16');
    expect(resolveServerConfig({ env: { MODEL_FILE: 'onnx/custom.onnx' } }).modelFile).toBe('onnx/custom.onnx');
    expect(resolveServerConfig({}).dtype).toBeUndefined();
    expect(resolveServerConfig({}).crossRequestBatching).toBe(true);
  });

  it('refuses a dtype transformers.js does not name, listing the names', () => {
    expect(() => resolveServerConfig({ env: { MODEL_DTYPE: 'int4' } })).toThrow(
      'dtype must be one of "fp32", "fp16", "q4", "q4f16", "int8", "uint8", "quantized", "bnb4"',
    );
  });
});
