// Packages that only some configurations use (the AWS SDK for a pass-through object store, the
// MySQL and Redis clients for real databases, node-forge for a self-signed certificate) load on
// first use, so a start that does not need them does not pay for them (cold start).
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);

/** A loader of the CommonJS package `name`: required on the first call, then kept. */
export function lazy<T>(name: string): () => T {
  let loaded: T | undefined;
  return () => (loaded ??= require(name) as T);
}
