/**
 * The command line of `edge-llm`, as a user types it next to `vllm serve`: vLLM's flag names,
 * argparse's forms (--flag value, --flag=value, switches, nargs="+" lists), and a refusal that
 * names the flag and the nearest one for anything it does not know.
 */
import { describe, expect, it } from 'vitest';
import { parseCommandLine, type ServeArgs } from '../../src/cli/args.js';
import { CliUsageError } from '../../src/cli/flags.js';
import { mainHelp, serveHelp } from '../../src/cli/help.js';
import { SETTING_KEYS, settingSurface } from '../../src/config/server-config.js';

const serve = (...argv: string[]) => parseCommandLine(['serve', ...argv]) as ServeArgs;
const refusal = (...argv: string[]) => {
  try {
    parseCommandLine(argv);
  } catch (error) {
    expect(error).toBeInstanceOf(CliUsageError);
    return (error as Error).message;
  }
  throw new Error(`accepted: ${argv.join(' ')}`);
};

describe('edge-llm command line', () => {
  it("takes vLLM's serve flags for the settings vLLM has", () => {
    const args = serve(
      'onnx-community/SmolLM2-135M-Instruct',
      '--port', '8081',
      '--host=0.0.0.0',
      '--api-key', 'k1', 'k2',
      '--served-model-name', 'smol',
      '--max-model-len', '2048',
      '--max-num-seqs', '8',
      '--max-num-batched-tokens=4096',
      '--dtype', 'q4',
      '--tool-call-parser', 'hermes',
      '--enable-auto-tool-choice',
      '--lora-modules', 'a=/tmp/a', 'b=/tmp/b',
      '--enable-lora',
      '--max-loras', '2',
      '-dp', '2',
      '--allowed-origins', '["https://a.example"]',
      '--disable-log-requests',
    );
    expect(args.model).toBe('onnx-community/SmolLM2-135M-Instruct');
    expect(args.settings).toEqual({
      port: 8081,
      host: '0.0.0.0',
      apiKey: ['k1', 'k2'],
      servedModelName: 'smol',
      maxSeqLen: 2048,
      maxRunningSequences: 8,
      maxBatchedTokens: 4096,
      dtype: 'q4',
      toolCallParser: 'hermes',
      loraModules: ['a=/tmp/a', 'b=/tmp/b'],
      maxLoras: 2,
      dataParallelSize: 2,
      corsAllowedOrigins: ['https://a.example'],
      logRequests: false,
    });
    expect(args.enableAutoToolChoice).toBe(true);
    expect(args.flagNames.port).toBe('--port');
    expect(args.flagNames.dataParallelSize).toBe('-dp');
  });

  it('has a flag for every setting, and reads switches, --no- switches and repeated list flags', () => {
    for (const key of SETTING_KEYS) expect(settingSurface(key).flag, key).toMatch(/^[a-z][a-z0-9-]+$/);
    expect(serve('--full-text-enabled').settings.fullTextEnabled).toBe(true);
    expect(serve('--no-cross-request-batching').settings.crossRequestBatching).toBe(false);
    expect(serve('--require-json-content-type=false').settings.requireJsonContentType).toBe(false);
    expect(serve('--allowed-hosts', 'a.example', '--allowed-hosts', '.b.example').settings.allowedHosts).toEqual(['a.example', '.b.example']);
    expect(serve('--intra-op-num-threads', 'auto').settings.intraOpNumThreads).toBe('auto');
    expect(serve('--intra-op-num-threads', '2').settings.intraOpNumThreads).toBe(2);
    expect(serve('--intra-op-spinning').settings.intraOpSpinning).toBe(true);
    expect(serve('--no-intra-op-spinning').settings.intraOpSpinning).toBe(false);
    expect(serve('--max-prompt-chars', '1000').settings.maxPromptChars).toBe(1000);
  });

  it("reads vLLM's --dtype words as the weight variant they mean", () => {
    expect(serve('--dtype', 'float32').settings.dtype).toBe('fp32');
    expect(serve('--dtype', 'half').settings.dtype).toBe('fp16');
    expect(serve('--dtype', 'auto').settings.dtype).toBeUndefined();
  });

  it('takes the model as the argument or --model, and no command as serve (npm start)', () => {
    expect(serve('--model', '/m/x').model).toBe('/m/x');
    expect(serve('/m/x', '--port', '1').model).toBe('/m/x');
    expect((parseCommandLine(['--port', '8081']) as ServeArgs).settings.port).toBe(8081);
    expect((parseCommandLine(['--port', '8081']) as ServeArgs).command).toBe('serve');
  });

  it('refuses an unknown flag naming it and the nearest flag', () => {
    expect(refusal('serve', '--prot', '8081')).toMatch(/unknown flag --prot; did you mean --port\?/);
    expect(refusal('serve', '--max-model-length', '10')).toMatch(/unknown flag --max-model-length; did you mean --max-model-len\?/);
    expect(refusal('serve', '--apikey=k')).toMatch(/unknown flag --apikey; did you mean --api-key\?/);
    expect(refusal('serve', '--tensor-parallel-size', '2')).toMatch(/unknown flag --tensor-parallel-size; did you mean --/);
    expect(refusal('srve')).toMatch(/unknown command "srve"/);
  });

  it('refuses a bad value naming the flag and the requirement', () => {
    expect(refusal('serve', '--port', 'eighty')).toBe('--port must be an integer in [0, 65535], got "eighty"');
    expect(refusal('serve', '--dtype', 'bf16')).toMatch(/^--dtype must be one of "fp32", .*got "bf16"$/);
    expect(refusal('serve', '--max-num-seqs')).toBe('--max-num-seqs needs a value');
    expect(refusal('serve', '--max-num-seqs', '0')).toMatch(/^--max-num-seqs must be an integer >= 1, got 0$/);
    expect(refusal('serve', '--tool-call-parser', 'nope')).toMatch(/^--tool-call-parser must be one of/);
    expect(refusal('serve', 'a', 'b')).toMatch(/unexpected argument "b"/);
    expect(refusal('serve', '--no-port')).toMatch(/unknown flag --no-port; did you mean --port\?/);
    expect(refusal('serve', '--disable-log-requests=1')).toMatch(/takes no value/);
  });

  it('answers --help and --version anywhere on the line', () => {
    expect(parseCommandLine(['--help'])).toEqual({ command: 'help', topic: 'main' });
    expect(parseCommandLine(['serve', '--port', '1', '-h'])).toEqual({ command: 'help', topic: 'serve' });
    expect(parseCommandLine(['--version'])).toEqual({ command: 'version' });
  });

  it('lists every flag in --help, with its env variable and default', () => {
    const help = mainHelp();
    for (const key of SETTING_KEYS) expect(help, key).toContain(`--${settingSurface(key).flag}`);
    expect(help).toMatch(/--port N\s+TCP port \(0: any free port\) \(default 8080\) \[env PORT\]/);
    expect(help).toContain('--api-key KEY');
    expect(help).not.toMatch(/--api-key KEY.*\(default/);
    expect(serveHelp()).toContain('Usage: edge-llm serve [MODEL] [flags]');
  });
});
