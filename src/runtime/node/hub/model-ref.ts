/**
 * A MODEL argument as a Hugging Face reference, by the conventions users already type:
 * `owner/repo` (vLLM, transformers), `owner/repo:QUANT` (llama.cpp's `-hf` and Ollama's
 * `hf.co/owner/repo:QUANT`: the one .gguf whose name carries that quantization), and
 * `owner/repo/path/file.gguf` (one file of a repo). A leading `hf.co/` or
 * `huggingface.co/` is accepted, as Ollama writes it.
 */

export interface HubModelRef {
  /** "owner/repo". */
  repo: string;
  /** llama.cpp's ":Q4_K_M": pick the .gguf carrying it. */
  quant?: string;
  /** A file of the repo, for owner/repo/path/file.gguf. */
  file?: string;
}

const NAME = '[A-Za-z0-9][A-Za-z0-9._-]*';
const REF = new RegExp(`^(?:(?:https?://)?(?:hf\\.co|huggingface\\.co)/)?(${NAME})/(${NAME})(?::([A-Za-z0-9._-]+)|/(\\S+))?$`);

/** The reference a MODEL text names, or null when it is not shaped like one. */
export function parseHubModelRef(text: string): HubModelRef | null {
  const match = REF.exec(text.trim());
  if (match === null) return null;
  const [, owner, name, quant, file] = match;
  if (name!.endsWith('.gguf') || name!.endsWith('.onnx')) return null;
  if (file !== undefined && (file.split('/').some((part) => part === '..' || part === '' || part === '.'))) return null;
  return { repo: `${owner}/${name}`, ...(quant !== undefined ? { quant } : {}), ...(file !== undefined ? { file } : {}) };
}

/** How the reference reads back (for messages). */
export function formatHubModelRef(ref: HubModelRef): string {
  return ref.quant ? `${ref.repo}:${ref.quant}` : ref.file ? `${ref.repo}/${ref.file}` : ref.repo;
}
