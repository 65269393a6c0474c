/**
 * JSON as Python's json.dumps(value, ensure_ascii=False) writes it: ", " and ": "
 * separators, floats in Python's repr. vLLM's XML-style tool parsers (qwen3_coder, glm45)
 * build a call's arguments with it, so the arguments text a client receives is the same.
 * (A float that JSON.parse read back as an integer, 3.0, prints as 3: its source is lost.)
 */
export function pythonJson(value: unknown): string {
  if (value === null || value === undefined) return 'null';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'boolean') return value ? 'true' : 'false';
  if (typeof value === 'number') return pythonNumber(value);
  if (Array.isArray(value)) return `[${value.map(pythonJson).join(', ')}]`;
  if (typeof value === 'object') {
    return `{${Object.entries(value as Record<string, unknown>).map(([key, item]) => `${JSON.stringify(key)}: ${pythonJson(item)}`).join(', ')}}`;
  }
  return JSON.stringify(String(value));
}

/** Python's repr of a number: integers plainly, floats in fixed notation for exponents in [-4, 16), else d.ddde±XX. */
function pythonNumber(value: number): string {
  if (Number.isNaN(value)) return 'NaN';
  if (!Number.isFinite(value)) return value > 0 ? 'Infinity' : '-Infinity';
  if (Number.isInteger(value) && Math.abs(value) < 1e16) return String(value);
  const [mantissa, exponentText] = value.toExponential().split('e');
  const exponent = Number(exponentText);
  if (exponent >= -4 && exponent < 16) {
    const fixed = String(value);
    return fixed.includes('.') || fixed.includes('e') ? fixed : `${fixed}.0`;
  }
  const digits = mantissa!.includes('.') ? mantissa! : `${mantissa}`;
  return `${digits}e${exponent < 0 ? '-' : '+'}${String(Math.abs(exponent)).padStart(2, '0')}`;
}
