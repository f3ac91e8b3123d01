import { Type } from '@sinclair/typebox';
// Runtime logs of an application (its traffic metric contracts come from src/shared/http/traffic.ts).
import { IdParams, LogEntry, LogQuery } from '../../shared/schemas/common.js';

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
