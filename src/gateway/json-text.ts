/**
 * JSON text for bodies that may hold bigints: the request parser keeps integers beyond
 * 2^53 exact as bigint (uint64 seeds), and they must reach the upstream digit for digit,
 * which JSON.stringify cannot write.
 */
export function writeJson(value: unknown): string {
  const marker = `\u0000bigint:${Math.random().toString(36).slice(2)}:`;
  let sawBigint = false;
  const text = JSON.stringify(value, (_key, inner: unknown) => {
    if (typeof inner !== 'bigint') return inner;
    sawBigint = true;
    return `${marker}${inner.toString()}`;
  });
  if (!sawBigint) return text;
  // The marker's random part keeps client strings from ever matching it.
  const escaped = JSON.stringify(marker).slice(1, -1);
  return text.replace(new RegExp(`"${escaped.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(-?\\d+)"`, 'g'), '$1');
}
