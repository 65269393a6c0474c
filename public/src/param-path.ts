/** "stop[1]" → "stop", "messages[0].content" → "messages", null (the whole body) → "". */
export function topLevelParam(param: string | null): string {
  if (param === null) return '';
  const match = /^[^.[]+/.exec(param);
  return match ? match[0] : param;
}
