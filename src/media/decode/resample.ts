/**
 * Band-limited resampling, exactly torchaudio.functional.resample's default rule
 * (resampling_method "sinc_interp_hann", lowpass_filter_width 6, rolloff 0.99): a
 * Hann-windowed sinc low-pass at the lower of the two Nyquist frequencies times the
 * rolloff, the window spanning 6 zero crossings of the sinc each side, evaluated as a
 * polyphase filter over the rates divided by their gcd; samples before the start and past
 * the end count as zero; ceil(length × to / from) samples out. So downsampling a 44.1/48
 * kHz file to 16 kHz does not fold content above 8 kHz back into the band, and the test
 * references (torchaudio) compute the same samples.
 */

const ZERO_CROSSINGS = 6;
const ROLLOFF = 0.99;

function gcd(a: number, b: number): number {
  while (b !== 0) [a, b] = [b, a % b];
  return a;
}

export function resample(input: Float32Array, fromRate: number, toRate: number): Float32Array {
  if (fromRate === toRate) return input.slice();
  const g = gcd(fromRate, toRate);
  const up = toRate / g; // phases: output sample n sits at input position n * down / up
  const down = fromRate / g;
  // Cut-off in cycles per input sample.
  const cutoff = 0.5 * Math.min(1, toRate / fromRate) * ROLLOFF;
  const halfWidth = Math.ceil(ZERO_CROSSINGS / (2 * cutoff));
  const taps = 2 * halfWidth + 1;

  // kernels[phase * taps + j] weighs input sample (floor(position) - halfWidth + j).
  const kernels = new Float32Array(up * taps);
  for (let phase = 0; phase < up; phase++) {
    const fraction = phase / up;
    for (let j = 0; j < taps; j++) {
      const distance = j - halfWidth - fraction;
      // x: the distance in zero crossings of the sinc; the window ends at the 6th.
      const x = 2 * cutoff * distance;
      if (Math.abs(x) >= ZERO_CROSSINGS) continue;
      const sinc = x === 0 ? 1 : Math.sin(Math.PI * x) / (Math.PI * x);
      const window = 0.5 * (1 + Math.cos((Math.PI * x) / ZERO_CROSSINGS));
      kernels[phase * taps + j] = 2 * cutoff * sinc * window;
    }
  }

  const outLength = Math.ceil((input.length * up) / down);
  const output = new Float32Array(outLength);
  for (let n = 0; n < outLength; n++) {
    const numerator = n * down;
    const base = Math.floor(numerator / up);
    const phase = numerator - base * up;
    const kernel = phase * taps;
    const first = base - halfWidth;
    const jStart = Math.max(0, -first);
    const jEnd = Math.min(taps, input.length - first);
    let sum = 0;
    for (let j = jStart; j < jEnd; j++) sum += input[first + j] * kernels[kernel + j];
    output[n] = sum;
  }
  return output;
}
