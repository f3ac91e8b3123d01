// Runtime logs of an application (its traffic metric contracts come from src/shared/http/traffic.ts).
import { IdParams, LogsOperation } from '../../shared/schemas/common.js';

export const getApplicationRuntimeLogsContract = {
  operationId: 'getApplicationRuntimeLogsV3',
  method: 'GET',
  path: '/applications/{id}/runtime-logs',
  summary: 'Get application runtime logs',
  tags: ['Applications'],
  params: IdParams,
  ...LogsOperation,
} as const;
