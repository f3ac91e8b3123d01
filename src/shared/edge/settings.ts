// Operator settings of the HTTP edge (docs/runtimes.md "Real applications"): where it listens, the base domain
// of system hostnames, which proxies' X-Forwarded-For it believes, the size of its cache, and HTTPS
// (its port, the redirect, where certificates come from: docs/runtimes.md "HTTPS at the edge").
import { intSetting, type Config } from '../config.js';

export interface EdgeSettings {
  /** Port of the HTTP edge (SLIPWAY_EDGE_PORT; 0 = any free port; default 8000). */
  port: number;
  /** Address the edge binds (SLIPWAY_EDGE_HOST; default the API's host). */
  host: string;
  /** Services are reached at `<name>.<baseDomain>` (SLIPWAY_BASE_DOMAIN; default localhost). */
  baseDomain: string;
  /** Addresses or CIDR ranges whose X-Forwarded-For the edge believes (SLIPWAY_EDGE_TRUSTED_PROXIES, comma-separated). */
  trustedProxies: string[];
  /**
   * A request header carrying the client's coordinates as "lat,lon" (SLIPWAY_EDGE_GEO_HEADER, e.g.
   * set by a CDN in front of the edge; lower case; none by default). Only set it when every request
   * comes through something that overwrites it: clients can send any header.
   */
  geoHeader: string | null;
  /** A request header carrying the client's ISO country code (SLIPWAY_EDGE_COUNTRY_HEADER, e.g. cf-ipcountry; none by default). */
  countryHeader: string | null;
  /** Days the edge keeps its request records (access logs, metrics; SLIPWAY_EDGE_TRAFFIC_RETENTION_DAYS; default 7). */
  trafficRetentionDays: number;
  /** Memory of the edge's response cache, in bytes (SLIPWAY_EDGE_CACHE_MB; default 64; 0 turns it off). */
  cacheBytes: number;
  /** Which edge driver serves (SLIPWAY_EDGE: `nginx` or `node`; unset: nginx when its binary is found, else node). */
  driver: 'nginx' | 'node' | null;
  /**
   * Whether Slipway stops its nginx when it stops (SLIPWAY_EDGE_STOP_ON_EXIT=1; default no: nginx
   * is the data plane and keeps serving while Slipway restarts). The test helpers set it.
   */
  stopOnExit: boolean;
  /** Port of the edge's HTTPS listener (SLIPWAY_EDGE_HTTPS_PORT; 0 = any free port; unset = no HTTPS, the default). */
  httpsPort: number | null;
  /** Plain HTTP to a hostname with a certificate is redirected to HTTPS (SLIPWAY_EDGE_HTTPS_REDIRECT=1; needs httpsPort). */
  httpsRedirect: boolean;
  /** Where the edge's certificates come from (SLIPWAY_EDGE_CERTIFICATES; edge/certificates.ts). */
  certificates: CertificateSetting;
}

/**
 * `local`: issued per hostname by Slipway's local CA (the default); `files`: the operator's
 * certificate and key (SLIPWAY_EDGE_CERTIFICATE_FILE, SLIPWAY_EDGE_CERTIFICATE_KEY_FILE), e.g. a
 * wildcard, used for every hostname it covers; `acme`: one per hostname from an ACME directory by HTTP-01
 * (edge/acme.ts), at SLIPWAY_EDGE_ACME_DIRECTORY with the contact SLIPWAY_EDGE_ACME_EMAIL, the
 * directory's TLS also trusting SLIPWAY_EDGE_ACME_CA_FILE (a private ACME server, tests).
 */
export type CertificateSetting = { mode: 'local' } | { mode: 'files'; certFile: string; keyFile: string } | AcmeSetting;

export interface AcmeSetting {
  mode: 'acme';
  directory: string;
  email: string | null;
  caFile: string | null;
}

/** Let's Encrypt's production directory, the default of SLIPWAY_EDGE_ACME_DIRECTORY. */
export const LETS_ENCRYPT_DIRECTORY = 'https://acme-v02.api.letsencrypt.org/directory';

export function edgeSettings(config: Config): EdgeSettings {
  const env = config.apps.env;
  return {
    port: intSetting(env, 'SLIPWAY_EDGE_PORT', 8000, 0),
    host: env.SLIPWAY_EDGE_HOST || config.host,
    baseDomain: (env.SLIPWAY_BASE_DOMAIN || 'localhost').toLowerCase(),
    trustedProxies: (env.SLIPWAY_EDGE_TRUSTED_PROXIES ?? '')
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean),
    geoHeader: env.SLIPWAY_EDGE_GEO_HEADER?.trim().toLowerCase() || null,
    countryHeader: env.SLIPWAY_EDGE_COUNTRY_HEADER?.trim().toLowerCase() || null,
    trafficRetentionDays: intSetting(env, 'SLIPWAY_EDGE_TRAFFIC_RETENTION_DAYS', 7),
    cacheBytes: intSetting(env, 'SLIPWAY_EDGE_CACHE_MB', 64, 0) * 1024 * 1024,
    driver: edgeDriver(env.SLIPWAY_EDGE),
    stopOnExit: env.SLIPWAY_EDGE_STOP_ON_EXIT === '1',
    ...httpsSettings(env),
  };
}

function httpsSettings(env: Record<string, string | undefined>): Pick<EdgeSettings, 'httpsPort' | 'httpsRedirect' | 'certificates'> {
  const httpsPort = intSetting(env, 'SLIPWAY_EDGE_HTTPS_PORT', undefined, 0) ?? null;
  const redirect = env.SLIPWAY_EDGE_HTTPS_REDIRECT ?? '';
  if (!['', '0', '1'].includes(redirect)) throw new Error(`SLIPWAY_EDGE_HTTPS_REDIRECT must be 1 or 0, not ${JSON.stringify(redirect)}`);
  if (redirect === '1' && httpsPort === null) throw new Error('SLIPWAY_EDGE_HTTPS_REDIRECT=1 needs SLIPWAY_EDGE_HTTPS_PORT (HTTPS is off)');
  const certificates = certificateSetting(env);
  if (certificates.mode === 'acme' && httpsPort === null)
    throw new Error('SLIPWAY_EDGE_CERTIFICATES=acme needs SLIPWAY_EDGE_HTTPS_PORT (HTTPS is off, so no certificate would be used)');
  return { httpsPort, httpsRedirect: redirect === '1', certificates };
}

function certificateSetting(env: Record<string, string | undefined>): CertificateSetting {
  const mode = env.SLIPWAY_EDGE_CERTIFICATES || 'local';
  if (mode === 'local') return { mode };
  if (mode === 'files') {
    const certFile = env.SLIPWAY_EDGE_CERTIFICATE_FILE;
    const keyFile = env.SLIPWAY_EDGE_CERTIFICATE_KEY_FILE;
    if (!certFile || !keyFile)
      throw new Error('SLIPWAY_EDGE_CERTIFICATES=files needs SLIPWAY_EDGE_CERTIFICATE_FILE and SLIPWAY_EDGE_CERTIFICATE_KEY_FILE (PEM paths)');
    return { mode, certFile, keyFile };
  }
  if (mode === 'acme') {
    const directory = env.SLIPWAY_EDGE_ACME_DIRECTORY || LETS_ENCRYPT_DIRECTORY;
    if (!/^https:\/\/\S+$/.test(directory)) throw new Error(`SLIPWAY_EDGE_ACME_DIRECTORY must be an https URL, not ${JSON.stringify(directory)}`);
    return { mode, directory, email: env.SLIPWAY_EDGE_ACME_EMAIL || null, caFile: env.SLIPWAY_EDGE_ACME_CA_FILE || null };
  }
  throw new Error(`SLIPWAY_EDGE_CERTIFICATES must be local, files or acme, not ${JSON.stringify(mode)}`);
}

function edgeDriver(v: string | undefined): 'nginx' | 'node' | null {
  if (!v) return null;
  if (v === 'nginx' || v === 'node') return v;
  throw new Error(`SLIPWAY_EDGE must be nginx or node, not ${JSON.stringify(v)}`);
}
