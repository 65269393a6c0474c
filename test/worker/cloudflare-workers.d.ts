/** The part of workerd's built-in `cloudflare:workers` module these tests use. */
declare module 'cloudflare:workers' {
  /** The bindings of the test Worker: wrangler.toml's vars plus vitest.config.ts's miniflare bindings. */
  export const env: Record<string, unknown>;
}
