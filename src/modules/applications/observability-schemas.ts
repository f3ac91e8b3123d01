import { Type } from '@sinclair/typebox';
// Runtime logs and traffic metrics of an application.
import { DateTime, IdParams, LogEntry, LogQuery, MetricPoint } from '../../shared/schemas/common.js';

/** The window of the traffic metrics: from/to, an optional interval and filter. */
const trafficWindow = {
  from: DateTime(),
  to: DateTime(),
  interval_in_seconds: Type.Optional(Type.Integer({ exclusiveMinimum: 0 })),
  filters: Type.Optional(Type.String()),
};
export const TrafficWindow = Type.Object(trafficWindow);
export const TopWindow = Type.Object({ ...trafficWindow, limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 10 })) });

export const getApplicationRuntimeLogsContract = {
  operationId: "getApplicationRuntimeLogsV3",
  method: "GET",
  path: "/applications/{id}/runtime-logs",
  summary: "Get application runtime logs",
  tags: ["Applications"],
  params: IdParams,
  querystring: LogQuery,
  success: 200,
  response: Type.Array(LogEntry),
  errors: [400,401,403,404,429,500],
} as const;

export const getApplicationRequestsPerMinuteContract = {
  operationId: "getApplicationRequestsPerMinuteV3",
  method: "GET",
  path: "/applications/{id}/metrics/requests-per-minute",
  summary: "Get application requests per minute",
  tags: ["Applications"],
  params: IdParams,
  querystring: TrafficWindow,
  success: 200,
  response: Type.Array(MetricPoint),
  errors: [401,403,404,500],
} as const;

export const getApplicationResponseTimeContract = {
  operationId: "getApplicationResponseTimeV3",
  method: "GET",
  path: "/applications/{id}/metrics/response-time",
  summary: "Get application response time",
  tags: ["Applications"],
  params: IdParams,
  querystring: Type.Object({ ...trafficWindow, percent: Type.Optional(Type.Integer({ minimum: 1, maximum: 99 })) }),
  success: 200,
  response: Type.Array(MetricPoint),
  errors: [401,403,404,500],
} as const;

export const getApplicationResponseTimeAvgContract = {
  operationId: "getApplicationResponseTimeAvgV3",
  method: "GET",
  path: "/applications/{id}/metrics/response-time-avg",
  summary: "Get application response time avg",
  tags: ["Applications"],
  params: IdParams,
  querystring: TrafficWindow,
  success: 200,
  response: Type.Object({
    average_response_time_ms: Type.Number({"minimum":0}),
  }, { additionalProperties: false }),
  errors: [401,403,404,500],
} as const;

export const getApplicationStatusCodesContract = {
  operationId: "getApplicationStatusCodesV3",
  method: "GET",
  path: "/applications/{id}/metrics/status-codes",
  summary: "Get application status codes",
  tags: ["Applications"],
  params: IdParams,
  querystring: TrafficWindow,
  success: 200,
  response: Type.Array(Type.Object({
    time: Type.String(),
    value: Type.Record(Type.String(), Type.Number()),
  }, { additionalProperties: false })),
  errors: [401,403,404,500],
} as const;

export const getApplicationTopStatusCodesContract = {
  operationId: "getApplicationTopStatusCodesV3",
  method: "GET",
  path: "/applications/{id}/metrics/top-status-codes",
  summary: "Get application top status codes",
  tags: ["Applications"],
  params: IdParams,
  querystring: TopWindow,
  success: 200,
  response: Type.Array(Type.Object({
    status: Type.String(),
    total: Type.Number({"minimum":0}),
  }, { additionalProperties: false })),
  errors: [401,403,404,500],
} as const;

export const getApplicationTopCountriesContract = {
  operationId: "getApplicationTopCountriesV3",
  method: "GET",
  path: "/applications/{id}/metrics/top-countries",
  summary: "Get application top countries",
  tags: ["Applications"],
  params: IdParams,
  querystring: TopWindow,
  success: 200,
  response: Type.Array(Type.Object({
    country: Type.String(),
    response_time: Type.Number({"minimum":0}),
    total: Type.Number({"minimum":0}),
  }, { additionalProperties: false })),
  errors: [401,403,404,500],
} as const;

export const getApplicationSlowestRequestsContract = {
  operationId: "getApplicationSlowestRequestsV3",
  method: "GET",
  path: "/applications/{id}/metrics/slowest-requests",
  summary: "Get application slowest requests",
  tags: ["Applications"],
  params: IdParams,
  querystring: TopWindow,
  success: 200,
  response: Type.Array(Type.Object({
    id: Type.String(),
    client_request_method: Type.String(),
    client_request_path: Type.String(),
    average_response_time_ms: Type.Number({"minimum":0}),
    count_of_requests: Type.Number({"minimum":0}),
  }, { additionalProperties: false })),
  errors: [401,403,404,500],
} as const;

export const getApplicationTopPagesContract = {
  operationId: "getApplicationTopPagesV3",
  method: "GET",
  path: "/applications/{id}/metrics/top-pages",
  summary: "Get application top pages",
  tags: ["Applications"],
  params: IdParams,
  querystring: TopWindow,
  success: 200,
  response: Type.Array(Type.Object({
    page: Type.String(),
    total: Type.Number({"minimum":0}),
  }, { additionalProperties: false })),
  errors: [401,403,404,500],
} as const;
