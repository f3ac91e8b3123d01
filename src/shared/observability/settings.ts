// Settings of metrics, traces and the request journal, read from the environment the server was
// started with (`config.observability.env`): docs/operations.md "Metrics", "Traces", "Request journal".
import { intSetting } from '../config.js';

export interface ObservabilitySettings {
  /** `GET /metrics` served (SLIPWAY_METRICS, on unless `off`). */
  metrics: boolean;
  /** A bearer token that reads /metrics besides the operator token (SLIPWAY_METRICS_TOKEN). */
  metricsToken?: string;
  /** Where spans go (OTLP over HTTP to `<it>/v1/traces`; SLIPWAY_OTEL_ENDPOINT or OTEL_EXPORTER_OTLP_ENDPOINT): tracing is off without one. */
  otlpEndpoint?: string;
  /** The service name spans carry (OTEL_SERVICE_NAME, default `slipway`). */
  serviceName: string;
  /** The OpenTelemetry SDK's own settings (`OTEL_BSP_SCHEDULE_DELAY`, ...). */
  otelEnv: Record<string, string | undefined>;
  journal: {
    /** Every /v3 request recorded in the database, one journal for all processes (SLIPWAY_JOURNAL=on; off by default). */
    enabled: boolean;
    /** Entries kept, the oldest dropped first (SLIPWAY_JOURNAL_MAX, default 1000). */
    max: number;
    /** Entries older than this dropped too (SLIPWAY_JOURNAL_MINUTES; unset: kept while they fit). */
    maxAgeMs?: number;
    /** Bytes of a request or response body kept (SLIPWAY_JOURNAL_BODY_BYTES, default 16 KiB). */
    bodyBytes: number;
  };
}

const onOff = (env: Record<string, string | undefined>, name: string, dflt: boolean): boolean => {
  const v = env[name]?.toLowerCase();
  if (v === undefined || v === '') return dflt;
  if (v === 'on' || v === '1' || v === 'true') return true;
  if (v === 'off' || v === '0' || v === 'false') return false;
  throw new Error(`${name} must be on or off (got "${env[name]}")`);
};

export function observabilitySettings(env: Record<string, string | undefined>): ObservabilitySettings {
  const endpoint = env.SLIPWAY_OTEL_ENDPOINT || env.OTEL_EXPORTER_OTLP_ENDPOINT || undefined;
  const minutes = intSetting(env, 'SLIPWAY_JOURNAL_MINUTES', undefined);
  return {
    metrics: onOff(env, 'SLIPWAY_METRICS', true),
    metricsToken: env.SLIPWAY_METRICS_TOKEN || undefined,
    otlpEndpoint: endpoint,
    serviceName: env.OTEL_SERVICE_NAME || 'slipway',
    otelEnv: env,
    journal: {
      enabled: onOff(env, 'SLIPWAY_JOURNAL', false),
      max: intSetting(env, 'SLIPWAY_JOURNAL_MAX', 1000),
      maxAgeMs: minutes === undefined ? undefined : minutes * 60_000,
      bodyBytes: intSetting(env, 'SLIPWAY_JOURNAL_BODY_BYTES', 16 * 1024, 0),
    },
  };
}
