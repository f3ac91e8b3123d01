// The OpenTelemetry Node SDK behind `Tracer` (trace.ts): spans batched and sent as OTLP/HTTP
// (JSON) to `<endpoint>/v1/traces`. Imported only when tracing is configured; its packages are
// required then too (lazy.ts: outside dist/cli.js, so a start without tracing does not parse them).
import type * as Api from '@opentelemetry/api';
import type { Context, Span } from '@opentelemetry/api';
import type * as SdkTraceNode from '@opentelemetry/sdk-trace-node';
import type * as OtlpHttp from '@opentelemetry/exporter-trace-otlp-http';
import type * as Resources from '@opentelemetry/resources';
import type { FastifyRequest } from 'fastify';
import { intSetting } from '../config.js';
import { lazy } from '../lazy.js';
import type { ObservabilitySettings } from './settings.js';
import type { Tracer } from './trace.js';

const otel = lazy<typeof Api>('@opentelemetry/api');
const sdk = lazy<typeof SdkTraceNode>('@opentelemetry/sdk-trace-node');
const otlp = lazy<typeof OtlpHttp>('@opentelemetry/exporter-trace-otlp-http');
const resources = lazy<typeof Resources>('@opentelemetry/resources');

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

/** The context of a remote parent from a W3C traceparent (none when absent or malformed). */
function parentOf(traceparent: string | null | undefined): Context {
  const { ROOT_CONTEXT, trace } = otel();
  const m = traceparent ? TRACEPARENT.exec(traceparent) : null;
  if (!m) return ROOT_CONTEXT;
  return trace.setSpanContext(ROOT_CONTEXT, { traceId: m[1]!, spanId: m[2]!, traceFlags: parseInt(m[3]!, 16), isRemote: true });
}

/** Ends `span` after `fn`, recording its error. */
async function ended<T>(span: Span, fn: () => Promise<T>): Promise<T> {
  const { SpanStatusCode } = otel();
  try {
    return await fn();
  } catch (e) {
    span.recordException(e as Error);
    span.setStatus({ code: SpanStatusCode.ERROR, message: (e as Error).message });
    throw e;
  } finally {
    span.end();
  }
}

export function openTelemetryTracer(settings: ObservabilitySettings, onError: (e: Error) => void): Tracer {
  const { context, propagation, ROOT_CONTEXT, SpanKind, SpanStatusCode, trace } = otel();
  const { BatchSpanProcessor, NodeTracerProvider } = sdk();
  const { OTLPTraceExporter } = otlp();
  const { resourceFromAttributes } = resources();
  const base = settings.otlpEndpoint!.replace(/\/+$/, '');
  const exporter = new OTLPTraceExporter({ url: `${base}/v1/traces` });
  const env = settings.otelEnv;
  const processor = new BatchSpanProcessor(exporter, {
    scheduledDelayMillis: intSetting(env, 'OTEL_BSP_SCHEDULE_DELAY', 5000, 0),
    maxExportBatchSize: intSetting(env, 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 512),
  });
  const provider = new NodeTracerProvider({ resource: resourceFromAttributes({ 'service.name': settings.serviceName }), spanProcessors: [processor] });
  // The process-wide context manager (AsyncLocalStorage) and the W3C propagator.
  provider.register();
  const tracer = provider.getTracer('slipway');
  const spans = new WeakMap<FastifyRequest, Span>();
  const traceparentOf = (span: Span | undefined) => {
    const sc = span?.spanContext();
    if (!sc || !trace.isSpanContextValid(sc)) return undefined;
    return `00-${sc.traceId}-${sc.spanId}-0${sc.traceFlags & 1}`;
  };
  return {
    startRequest(req) {
      const op = req.routeOptions.config?.op;
      const name = op?.contract.operationId ?? (req.routeOptions.url ? `${req.method} ${req.routeOptions.url}` : `${req.method} unknown`);
      // A caller's traceparent makes the request a child of the caller's span.
      const parent = propagation.extract(ROOT_CONTEXT, req.headers);
      const span = tracer.startSpan(
        name,
        {
          kind: SpanKind.SERVER,
          attributes: { 'http.request.method': req.method, 'http.route': req.routeOptions.url ?? '', 'slipway.request_id': String(req.id) },
        },
        parent,
      );
      spans.set(req, span);
    },
    endRequest(req, status) {
      const span = spans.get(req);
      if (!span) return;
      span.setAttribute('http.response.status_code', status);
      if (status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
    },
    within(req, fn) {
      const span = spans.get(req);
      return span ? context.with(trace.setSpan(context.active(), span), fn) : fn();
    },
    span(name, fn) {
      return tracer.startActiveSpan(name, (span) => ended(span, fn));
    },
    job(kind, id, traceparent, fn) {
      return tracer.startActiveSpan(
        `job ${kind}`,
        { kind: SpanKind.CONSUMER, attributes: { 'slipway.job.kind': kind, 'slipway.job.id': id } },
        parentOf(traceparent),
        (span) => ended(span, fn),
      );
    },
    traceparent: () => traceparentOf(trace.getSpan(context.active())),
    async shutdown() {
      await provider.shutdown().catch(onError);
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}
