// The eight traffic metric operations a running web service offers (applications and static
// sites: requests per minute, response time, average response time, status codes, top status
// codes, top countries, slowest requests, top pages), declared once: the same shapes under
// `<basePath>/{id}/metrics/...`, with operation ids `get<Prefix><Metric>V3`.
import { Type } from '@sinclair/typebox';
import type { Permission } from '../auth/rbac.js';
import type { CallContext } from '../context.js';
import type { TrafficMetric, Window } from '../runtime/traffic.js';
import { DateTime, IdParams, MetricPoint } from '../schemas/common.js';
import { defineOperation, type Contract } from './operation.js';

/** The window of the traffic metrics: from/to, an optional interval and filter. */
const trafficWindow = {
  from: DateTime(),
  to: DateTime(),
  interval_in_seconds: Type.Optional(Type.Integer({ exclusiveMinimum: 0 })),
  filters: Type.Optional(Type.String()),
};
const TrafficWindow = Type.Object(trafficWindow);
const TopWindow = Type.Object({ ...trafficWindow, limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 10 })) });

const METRICS: { metric: TrafficMetric; slug: string; name: string; words: string; query: Contract['querystring']; response: Contract['response'] }[] = [
  {
    metric: 'requestsPerMinute',
    slug: 'requests-per-minute',
    name: 'RequestsPerMinute',
    words: 'requests per minute',
    query: TrafficWindow,
    response: Type.Array(MetricPoint),
  },
  {
    metric: 'responseTime',
    slug: 'response-time',
    name: 'ResponseTime',
    words: 'response time',
    query: Type.Object({ ...trafficWindow, percent: Type.Optional(Type.Integer({ minimum: 1, maximum: 99 })) }),
    response: Type.Array(MetricPoint),
  },
  {
    metric: 'responseTimeAvg',
    slug: 'response-time-avg',
    name: 'ResponseTimeAvg',
    words: 'response time avg',
    query: TrafficWindow,
    response: Type.Object({ average_response_time_ms: Type.Number({ minimum: 0 }) }, { additionalProperties: false }),
  },
  {
    metric: 'statusCodes',
    slug: 'status-codes',
    name: 'StatusCodes',
    words: 'status codes',
    query: TrafficWindow,
    response: Type.Array(Type.Object({ time: Type.String(), value: Type.Record(Type.String(), Type.Number()) }, { additionalProperties: false })),
  },
  {
    metric: 'topStatusCodes',
    slug: 'top-status-codes',
    name: 'TopStatusCodes',
    words: 'top status codes',
    query: TopWindow,
    response: Type.Array(Type.Object({ status: Type.String(), total: Type.Number({ minimum: 0 }) }, { additionalProperties: false })),
  },
  {
    metric: 'topCountries',
    slug: 'top-countries',
    name: 'TopCountries',
    words: 'top countries',
    query: TopWindow,
    response: Type.Array(
      Type.Object({ country: Type.String(), response_time: Type.Number({ minimum: 0 }), total: Type.Number({ minimum: 0 }) }, { additionalProperties: false }),
    ),
  },
  {
    metric: 'slowestRequests',
    slug: 'slowest-requests',
    name: 'SlowestRequests',
    words: 'slowest requests',
    query: TopWindow,
    response: Type.Array(
      Type.Object(
        {
          id: Type.String(),
          client_request_method: Type.String(),
          client_request_path: Type.String(),
          average_response_time_ms: Type.Number({ minimum: 0 }),
          count_of_requests: Type.Number({ minimum: 0 }),
        },
        { additionalProperties: false },
      ),
    ),
  },
  {
    metric: 'topPages',
    slug: 'top-pages',
    name: 'TopPages',
    words: 'top pages',
    query: TopWindow,
    response: Type.Array(Type.Object({ page: Type.String(), total: Type.Number({ minimum: 0 }) }, { additionalProperties: false })),
  },
];

export interface TrafficService {
  /** `Application` -> getApplicationRequestsPerMinuteV3. */
  prefix: string;
  /** `application` -> "Get application requests per minute". */
  noun: string;
  /** `/applications`. */
  basePath: string;
  tag: string;
  permission: Permission;
  /** One metric of the caller's service `id` over a window. */
  metric(ctx: CallContext, id: string, metric: TrafficMetric, w: Window): Promise<unknown>;
}

/** The eight metric operations of a service kind (read tier). */
export function trafficOperations(s: TrafficService) {
  return METRICS.map((m) =>
    defineOperation<Contract>({
      contract: {
        operationId: `get${s.prefix}${m.name}V3`,
        method: 'GET',
        path: `${s.basePath}/{id}/metrics/${m.slug}`,
        summary: `Get ${s.noun} ${m.words}`,
        tags: [s.tag],
        params: IdParams,
        querystring: m.query,
        success: 200,
        response: m.response,
        errors: [401, 403, 404, 500],
      },
      permission: s.permission,
      tier: 'read',
      handler: async (r) => s.metric(r, (r.params as { id: string }).id, m.metric, r.query as Window) as never,
    }),
  );
}
