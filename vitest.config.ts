import { fileURLToPath } from 'node:url';
import { cloudflareTest } from '@cloudflare/vitest-pool-workers';
import { configDefaults, defineConfig, defineProject } from 'vitest/config';
import { keyCheckingUpstream, TEST_UPSTREAM_API_KEY } from './test/worker/upstream-proxy.js';

const path = (relative: string) => fileURLToPath(new URL(relative, import.meta.url));

/**
 * Two projects in one `vitest run`: everything under Node, and test/worker inside
 * workerd (the Workers runtime, through Miniflare), where the Worker entry runs the
 * real model on onnxruntime-web and delegates to a Node server started by the global
 * setup.
 */
export default defineConfig({
  test: {
    reporters: ['default', './test/summary-reporter.ts'],
    projects: [
      defineProject({
        test: {
          name: 'node',
          // test/worker/*.node.test.ts drive workerd from Node (wrangler dev); the rest of test/worker runs inside it.
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, 'test/worker/**/!(*.node).test.ts'],
          // Compiles the server once (dist/node/server.js) for the tests that start it as `npm start` does.
          globalSetup: ['test/e2e/build-server.global.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      }),
      defineProject({
        plugins: [
          cloudflareTest(({ inject }) => ({
            wrangler: { configPath: './wrangler.toml' },
            miniflare: {
              // Where test/worker/global-setup.ts started the Node server the Worker delegates to.
              bindings: { TEST_NODE_SERVER_URL: inject('nodeServerUrl'), TEST_UPSTREAM_API_KEY },
              // A service binding to a key-checking backend in front of that server.
              serviceBindings: { TEST_UPSTREAM_SERVICE: keyCheckingUpstream(inject('nodeServerUrl')) },
              // The platform's rate-limiting binding, for the gateway's edge limits.
              ratelimits: { TEST_RATE_LIMITER: { simple: { limit: 2, period: 60 } } },
            },
          })),
        ],
        // Loads ORT's 14 MB .wasm in seconds instead of ~15 s: see test/worker/ort-wasm-binding.ts.
        resolve: {
          alias: { 'onnxruntime-web/ort-wasm-simd-threaded.wasm': path('./test/worker/ort-wasm-binding.ts') },
        },
        test: {
          name: 'workerd',
          include: ['test/worker/**/*.test.ts'],
          exclude: [...configDefaults.exclude, 'test/worker/**/*.node.test.ts'],
          globalSetup: ['test/worker/global-setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
        },
      }),
    ],
  },
});
