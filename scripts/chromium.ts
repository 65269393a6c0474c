/**
 * How the project starts Debian's Chromium (through playwright-core, no browser download)
 * for the playground's e2e tests and the in-page benchmark.
 */
export const CHROMIUM_PATH = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  // Without these Chromium phones home (updates, field trials).
  '--disable-background-networking',
  '--disable-component-update',
  '--no-first-run',
  // WebGPU on SwiftShader (Chromium's CPU implementation of Vulkan): no GPU needed, so the
  // in-page WebGPU engine runs in CI. The adapter has no shader-f16.
  '--enable-unsafe-webgpu',
  '--use-webgpu-adapter=swiftshader',
];
