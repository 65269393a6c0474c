/** Call ids: vLLM's "chatcmpl-tool-<32 hex>", and Mistral's 9 alphanumerics. */

function randomHex(bytes: number): string {
  const buffer = new Uint8Array(bytes);
  crypto.getRandomValues(buffer);
  return Array.from(buffer, (byte) => byte.toString(16).padStart(2, '0')).join('');
}

export function toolCallId(): string {
  return `chatcmpl-tool-${randomHex(16)}`;
}

const ALPHANUMERIC = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

export function mistralToolCallId(): string {
  const buffer = new Uint8Array(9);
  crypto.getRandomValues(buffer);
  return Array.from(buffer, (byte) => ALPHANUMERIC[byte % ALPHANUMERIC.length]).join('');
}
