// Operator settings of object storage, from `SLIPWAY_OBJECT_STORAGE_*` variables:
//   SLIPWAY_OBJECT_STORAGE_BACKEND          filesystem (default) | s3
//   SLIPWAY_OBJECT_STORAGE_BASE_DOMAIN      enables virtual-hosted addressing: <bucket>.<base domain>
//   SLIPWAY_OBJECT_STORAGE_CDN_DOMAIN       public CDN hostnames are <bucket>.<cdn domain> (default cdn.localhost)
//   SLIPWAY_OBJECT_STORAGE_S3_ENDPOINT      the s3 backend: the upstream S3-compatible endpoint
//   SLIPWAY_OBJECT_STORAGE_S3_BUCKET        ... the upstream bucket holding every Slipway bucket's bytes
//   SLIPWAY_OBJECT_STORAGE_S3_ACCESS_KEY / _S3_SECRET_KEY / _S3_REGION (default us-east-1)
//   SLIPWAY_OBJECT_STORAGE_S3_PATH_STYLE    true (default) | false
//   SLIPWAY_OBJECT_STORAGE_S3_PREFIX        key prefix inside the upstream bucket (default none)
import type { Config } from '../../shared/config.js';

/** Path-style addressing lives under this prefix on the main port: `/s3/<bucket>/<key>`. */
export const PATH_PREFIX = '/s3';

export interface UpstreamSettings {
  endpoint: string;
  bucket: string;
  region: string;
  accessKeyId: string;
  secretAccessKey: string;
  forcePathStyle: boolean;
  prefix: string;
}

export interface ObjectStorageSettings {
  backend: 'filesystem' | 's3';
  baseDomain: string | null;
  cdnDomain: string;
  upstream: UpstreamSettings | null;
}

const hostname = (name: string, v: string | undefined): string | null => {
  if (!v) return null;
  const h = v.trim().toLowerCase().replace(/\.$/, '');
  if (!/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(h)) throw new Error(`${name} must be a host name (got "${v}")`);
  return h;
};

export function objectStorageSettings(config: Config): ObjectStorageSettings {
  const env = config.objectStorage.env;
  const v = (k: string) => env[`SLIPWAY_OBJECT_STORAGE_${k}`] || undefined;
  const backend = v('BACKEND') ?? 'filesystem';
  if (backend !== 'filesystem' && backend !== 's3') throw new Error(`SLIPWAY_OBJECT_STORAGE_BACKEND must be filesystem or s3 (got "${backend}")`);
  let upstream: UpstreamSettings | null = null;
  if (backend === 's3') {
    const need = (k: string) => {
      const x = v(k);
      if (!x) throw new Error(`SLIPWAY_OBJECT_STORAGE_${k} is required with SLIPWAY_OBJECT_STORAGE_BACKEND=s3`);
      return x;
    };
    upstream = {
      endpoint: need('S3_ENDPOINT'),
      bucket: need('S3_BUCKET'),
      accessKeyId: need('S3_ACCESS_KEY'),
      secretAccessKey: need('S3_SECRET_KEY'),
      region: v('S3_REGION') ?? 'us-east-1',
      forcePathStyle: (v('S3_PATH_STYLE') ?? 'true').toLowerCase() !== 'false',
      prefix: (v('S3_PREFIX') ?? '').replace(/^\/+/, ''),
    };
  }
  return {
    backend,
    baseDomain: hostname('SLIPWAY_OBJECT_STORAGE_BASE_DOMAIN', v('BASE_DOMAIN')),
    cdnDomain: hostname('SLIPWAY_OBJECT_STORAGE_CDN_DOMAIN', v('CDN_DOMAIN')) ?? 'cdn.localhost',
    upstream,
  };
}
