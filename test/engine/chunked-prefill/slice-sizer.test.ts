/**
 * The chunked prefill's slice size (src/engine/chunked-prefill/slice-sizer.ts): what the
 * long_prefill_token_threshold setting fixes, else what the measured times give.
 */
import { describe, expect, it } from 'vitest';
import { MIN_SLICE_TOKENS, SLICE_SHARE, SliceSizer } from '../../../src/engine/chunked-prefill/slice-sizer.js';

describe('SliceSizer', () => {
  it('feeds the fixed number of tokens when the setting gives one, within the step budget', () => {
    const sizer = new SliceSizer(64);
    sizer.stepTook(10);
    sizer.sliceTook(64, 1000);
    expect(sizer.sliceTokens(8192)).toBe(64);
    expect(sizer.sliceTokens(40)).toBe(40);
  });

  it('sizes a slice to cost about SLICE_SHARE of a decode step from the measured times', () => {
    const sizer = new SliceSizer(0);
    sizer.stepTook(20);
    // 2 ms per prompt token: a 20 ms step allows 20 * 0.9 / 2 = 9 tokens, raised to the floor.
    sizer.sliceTook(32, 64);
    expect(sizer.sliceTokens(8192)).toBe(MIN_SLICE_TOKENS);
    // 0.25 ms per token (the average moves toward it): the slice grows with the measurements.
    for (let i = 0; i < 60; i++) sizer.sliceTook(64, 16);
    expect(sizer.sliceTokens(8192)).toBeGreaterThanOrEqual(Math.floor((20 * SLICE_SHARE) / 0.25) - 1);
    expect(sizer.sliceTokens(8192)).toBeLessThanOrEqual(Math.floor((20 * SLICE_SHARE) / 0.25));
    expect(sizer.sliceTokens(50)).toBe(50);
    // Slower steps (more rows) allow larger slices.
    for (let i = 0; i < 60; i++) sizer.stepTook(40);
    expect(sizer.sliceTokens(8192)).toBeGreaterThanOrEqual(Math.floor((40 * SLICE_SHARE) / 0.25) - 1);
    expect(sizer.sliceTokens(8192)).toBeLessThanOrEqual(Math.floor((40 * SLICE_SHARE) / 0.25));
  });
});
