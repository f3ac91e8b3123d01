// Helpers of the observability suites: reading /metrics as samples, and an OTLP/HTTP receiver
// (JSON, as @opentelemetry/exporter-trace-otlp-http sends it) that keeps the spans it is sent.
import { OPERATOR_TOKEN, type TestServer } from '../helpers/server.js';
import { Receiver } from '../webhooks/support.js';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The samples of a Prometheus text exposition (fails on a line that is not one). */
export function parseExposition(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

/** GET /metrics with the operator token (or `token`), parsed. */
export async function scrape(s: TestServer, token: string | null = OPERATOR_TOKEN): Promise<{ status: number; type: string | null; samples: Sample[] }> {
  const res = await fetch(`${s.baseUrl}/metrics`, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  const text = await res.text();
  return { status: res.status, type: res.headers.get('content-type'), samples: res.status === 200 ? parseExposition(text) : [] };
}

/** The sum of the samples named `name` whose labels include `labels`. */
export function total(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  return samples.filter((x) => x.name === name && Object.entries(labels).every(([k, v]) => x.labels[k] === v)).reduce((a, x) => a + x.value, 0);
}

export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  parentSpanId: string;
  name: string;
  attributes: Record<string, unknown>;
}

/** The spans of an OTLP/JSON export request. */
function spansOf(body: any): ReceivedSpan[] {
  return (body?.resourceSpans ?? []).flatMap((rs: any) =>
    (rs.scopeSpans ?? []).flatMap((ss: any) =>
      (ss.spans ?? []).map((sp: any) => ({
        traceId: sp.traceId,
        spanId: sp.spanId,
        parentSpanId: sp.parentSpanId ?? '',
        name: sp.name,
        attributes: Object.fromEntries((sp.attributes ?? []).map((a: { key: string; value: Record<string, unknown> }) => [a.key, Object.values(a.value)[0]])),
      })),
    ),
  );
}

/** An OTLP/HTTP trace receiver on 127.0.0.1 (the webhook suites' receiver at `/v1/traces`). */
export class OtlpReceiver {
  private rx = new Receiver();

  constructor() {
    this.rx.behavior = { status: 200, body: '{}' };
  }

  /** The base URL an exporter is given (it posts to `<it>/v1/traces`). */
  get url(): string {
    return this.rx.url.replace(/\/v1\/traces$/, '');
  }

  get spans(): ReceivedSpan[] {
    return this.rx.received.flatMap((r) => spansOf(r.json));
  }

  async start(): Promise<this> {
    await this.rx.start('/v1/traces');
    return this;
  }

  close(): Promise<void> {
    return this.rx.close();
  }
}
