// What the rest of the server calls to be traced: the request's span around its handler, a span
// around a database transaction, a job's span continuing the trace of the request that queued it,
// the W3C `traceparent` of the span running now. Each is a plain call (or nothing) until tracing
// starts (`startTracing`, tracing-sdk.ts, loaded only when an OTLP endpoint is configured), so a
// server without tracing pays for none of it. Tracing is per process: OpenTelemetry's context
// follows async calls through one process-wide context manager.
import type { FastifyRequest } from 'fastify';
import type { ObservabilitySettings } from './settings.js';

export interface Tracer {
  /** Starts the span of a request (onRequest), ended by `endRequest` (onResponse). */
  startRequest(req: FastifyRequest): void;
  endRequest(req: FastifyRequest, status: number): void;
  /** Runs `fn` with the request's span as the active one (its children are the request's). */
  within<T>(req: FastifyRequest, fn: () => Promise<T>): Promise<T>;
  /** Runs `fn` in a child span of the active one. */
  span<T>(name: string, fn: () => Promise<T>): Promise<T>;
  /** Runs a job's attempt in a span, a child of the span that queued it (`traceparent`) when there was one. */
  job<T>(kind: string, id: string, traceparent: string | null, fn: () => Promise<T>): Promise<T>;
  /** The W3C traceparent of the active span. */
  traceparent(): string | undefined;
  /** Sends the spans not sent yet, and stops. */
  shutdown(): Promise<void>;
}

let current: Tracer | undefined;

/** The process's tracer, once tracing started. */
export const tracer = (): Tracer | undefined => current;

/** Loads the OpenTelemetry SDK and starts tracing when an OTLP endpoint is configured (once per process). */
export async function startTracing(settings: ObservabilitySettings, onError: (e: Error) => void): Promise<Tracer | undefined> {
  if (!settings.otlpEndpoint || current) return current;
  const { openTelemetryTracer } = await import('./tracing-sdk.js');
  current = openTelemetryTracer(settings, onError);
  return current;
}

/** Stops tracing (the server closes): what was not sent yet is sent. */
export async function stopTracing(): Promise<void> {
  const t = current;
  current = undefined;
  await t?.shutdown();
}

/** The traceparent of the active span, if tracing: stored with a job queued now (see jobs.ts). */
export const activeTraceparent = (): string | null => current?.traceparent() ?? null;

/** `fn` in a child span named `name` of the active span, when tracing. */
export const inSpan = <T>(name: string, fn: () => Promise<T>): Promise<T> => (current ? current.span(name, fn) : fn());
