/**
 * A whole number in English words as num2words writes cardinals ("sixteen",
 * "twenty-one", "one hundred and five"): SmolVLM's video prompt names its frame count so.
 */
const ONES = ['zero', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen'];
const TENS = ['', '', 'twenty', 'thirty', 'forty', 'fifty', 'sixty', 'seventy', 'eighty', 'ninety'];

export function englishNumber(value: number): string {
  if (!Number.isInteger(value) || value < 0 || value >= 1_000_000) throw new Error(`no English words for ${value} here`);
  if (value < 20) return ONES[value];
  if (value < 100) return TENS[Math.trunc(value / 10)] + (value % 10 !== 0 ? `-${ONES[value % 10]}` : '');
  if (value < 1000) {
    const rest = value % 100;
    return `${ONES[Math.trunc(value / 100)]} hundred` + (rest !== 0 ? ` and ${englishNumber(rest)}` : '');
  }
  const rest = value % 1000;
  return `${englishNumber(Math.trunc(value / 1000))} thousand` + (rest === 0 ? '' : rest < 100 ? ` and ${englishNumber(rest)}` : `, ${englishNumber(rest)}`);
}
