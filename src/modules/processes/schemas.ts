// Contracts of the processes area: an application's processes (web, worker, cron, job), the cron
// trigger, and per-process metrics. Shapes follow the v3 contract; create/list/get/update come
// from the additions document (which adds the cron fields concurrency_policy and max_run_time_seconds).
import { Type } from '@sinclair/typebox';
import {
  DateTime,
  MAX_INT4,
  MessageResponse,
  MetricSeries,
  MetricWindowQuery,
  Nullable,
  PageQuery,
  Paginated,
  StringEnum,
  Uuid,
} from '../../shared/schemas/common.js';

export const PROCESS_TYPES = ['web', 'worker', 'cron', 'job'] as const;
export const JOB_START_POLICIES = ['beforeDeployment', 'afterSuccessDeployment', 'afterFailedDeployment'] as const;
export const CONCURRENCY_POLICIES = ['Forbid', 'Replace'] as const;

// ---- Representation -------------------------------------------------------------------------

export const HorizontalScalingConfig = Type.Object(
  {
    minInstanceCount: Type.Integer({ minimum: 0, maximum: 50 }),
    maxInstanceCount: Type.Integer({ minimum: 0, maximum: 50 }),
    targetCpuPercent: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 100 }))),
    targetMemoryPercent: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 100 }))),
    scaleUpIntervalSeconds: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 60000 }))),
    scaleUpIncrement: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 5 }))),
    scaleDownIntervalSeconds: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 60000 }))),
    scaleDownIncrement: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 5 }))),
  },
  { additionalProperties: false },
);

export const ScalingStrategy = Type.Union([
  Type.Object(
    {
      type: StringEnum(['manual']),
      config: Type.Object(
        {
          instanceCount: Type.Integer({ minimum: 0, maximum: 50 }),
        },
        { additionalProperties: false },
      ),
    },
    { additionalProperties: false },
  ),
  Type.Object(
    {
      type: StringEnum(['horizontal']),
      config: HorizontalScalingConfig,
    },
    { additionalProperties: false },
  ),
]);

export const ProbeHttpGet = Type.Object(
  {
    path: Type.Optional(Nullable(Type.String())),
    port: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 65535 }))),
    host: Type.Optional(Nullable(Type.String())),
    scheme: Type.Optional(Nullable(StringEnum(['HTTP', 'HTTPS']))),
    httpHeaders: Type.Optional(
      Nullable(
        Type.Array(
          Type.Object(
            {
              name: Type.String(),
              value: Type.String(),
            },
            { additionalProperties: false },
          ),
        ),
      ),
    ),
  },
  { additionalProperties: false },
);

export const Probe = Type.Object(
  {
    exec: Type.Optional(
      Nullable(
        Type.Object(
          {
            command: Type.Array(Type.String()),
          },
          { additionalProperties: false },
        ),
      ),
    ),
    httpGet: Type.Optional(Nullable(ProbeHttpGet)),
    tcpSocket: Type.Optional(
      Nullable(
        Type.Object(
          {
            host: Type.Optional(Nullable(Type.String())),
            port: Type.Integer({ minimum: 1, maximum: 65535 }),
          },
          { additionalProperties: false },
        ),
      ),
    ),
    initialDelaySeconds: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
    periodSeconds: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
    timeoutSeconds: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
    successThreshold: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
    failureThreshold: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
  },
  { additionalProperties: false },
);

export const Process = Type.Object(
  {
    id: Uuid(),
    app_id: Nullable(Uuid()),
    key: Type.String({ minLength: 1, maxLength: 64 }),
    type: Nullable(StringEnum(PROCESS_TYPES)),
    display_name: Nullable(Type.String({ minLength: 1, maxLength: 255 })),
    entrypoint: Type.String({ maxLength: 1024 }),
    port: Nullable(Type.Integer({ minimum: 1, maximum: 65535 })),
    is_ingress_enabled: Type.Boolean(),
    ingress_protocol: Nullable(StringEnum(['http', 'grpc'])),
    scaling_strategy: Nullable(ScalingStrategy),
    resource_type_id: Nullable(Uuid()),
    resource_type_name: Nullable(Type.String()),
    cpu_limit: Nullable(Type.Integer({ minimum: 1 })),
    memory_limit: Nullable(Type.Integer({ minimum: 1 })),
    schedule: Nullable(Type.String({ maxLength: 100 })),
    time_zone: Nullable(Type.String({ maxLength: 100 })),
    job_start_policy: Nullable(StringEnum(JOB_START_POLICIES)),
    liveness_probe: Nullable(Probe),
    readiness_probe: Nullable(Probe),
    internal_hostname: Nullable(Type.String()),
    created_at: DateTime(),
    updated_at: DateTime(),
    // The contract annotates `default: "Forbid"` here; the serializer would write that default into
    // every process, so the representation omits the annotation: the two cron-only fields are absent
    // on web, worker and job processes (cron processes always carry them).
    concurrency_policy: Type.Optional(StringEnum(CONCURRENCY_POLICIES)),
    max_run_time_seconds: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
  },
  { additionalProperties: false },
);

// ---- Request bodies (the contract leaves these objects open: no additionalProperties) --------

export const HorizontalScalingConfigInput = Type.Object({
  minInstanceCount: Type.Integer({ minimum: 0, maximum: 50 }),
  maxInstanceCount: Type.Integer({ minimum: 0, maximum: 50 }),
  targetCpuPercent: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 100 }))),
  targetMemoryPercent: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 100 }))),
  scaleUpIntervalSeconds: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 60000 }))),
  scaleUpIncrement: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 5 }))),
  scaleDownIntervalSeconds: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 60000 }))),
  scaleDownIncrement: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 5 }))),
});

export const ScalingStrategyInput = Type.Union([
  Type.Object({
    type: StringEnum(['manual']),
    config: Type.Object({
      instanceCount: Type.Integer({ minimum: 0, maximum: 50 }),
    }),
  }),
  Type.Object({
    type: StringEnum(['horizontal']),
    config: HorizontalScalingConfigInput,
  }),
]);

export const ProbeHttpGetInput = Type.Object({
  path: Type.Optional(Nullable(Type.String())),
  port: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 65535 }))),
  host: Type.Optional(Nullable(Type.String())),
  scheme: Type.Optional(Nullable(StringEnum(['HTTP', 'HTTPS']))),
  httpHeaders: Type.Optional(
    Nullable(
      Type.Array(
        Type.Object({
          name: Type.String(),
          value: Type.String(),
        }),
      ),
    ),
  ),
});

export const ProbeInput = Type.Object({
  exec: Type.Optional(
    Nullable(
      Type.Object({
        command: Type.Array(Type.String()),
      }),
    ),
  ),
  httpGet: Type.Optional(Nullable(ProbeHttpGetInput)),
  tcpSocket: Type.Optional(
    Nullable(
      Type.Object({
        host: Type.Optional(Nullable(Type.String())),
        port: Type.Integer({ minimum: 1, maximum: 65535 }),
      }),
    ),
  ),
  initialDelaySeconds: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
  periodSeconds: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
  timeoutSeconds: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
  successThreshold: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
  failureThreshold: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
});

export const CreateProcessBody = Type.Object({
  display_name: Type.String({ minLength: 1, maxLength: 255 }),
  entrypoint: Type.Optional(Type.String({ maxLength: 1024 })),
  type: StringEnum(PROCESS_TYPES),
  resource_type_id: Type.String({ maxLength: 36 }),
  scaling_strategy: ScalingStrategyInput,
  port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
  schedule: Type.Optional(Type.String({ maxLength: 100 })),
  time_zone: Type.Optional(Type.String({ maxLength: 100 })),
  job_start_policy: Type.Optional(StringEnum(JOB_START_POLICIES)),
  liveness_probe: Type.Optional(ProbeInput),
  readiness_probe: Type.Optional(ProbeInput),
  concurrency_policy: Type.Optional(StringEnum(CONCURRENCY_POLICIES, { default: 'Forbid' })),
  max_run_time_seconds: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: MAX_INT4 }))),
});

// The contract documents `default: "Forbid"` on concurrency_policy here too. The server fills
// schema defaults into request bodies, which on a PATCH would silently reset a `Replace` policy
// whenever the field is omitted; so the update body carries the same values without the default.
export const UpdateProcessBody = Type.Object({
  display_name: Type.Optional(Type.String({ minLength: 1, maxLength: 255 })),
  entrypoint: Type.Optional(Type.String({ maxLength: 1024 })),
  resource_type_id: Type.Optional(Type.String({ maxLength: 36 })),
  scaling_strategy: Type.Optional(ScalingStrategyInput),
  port: Type.Optional(Type.Integer({ minimum: 1, maximum: 65535 })),
  is_ingress_enabled: Type.Optional(Type.Boolean()),
  ingress_protocol: Type.Optional(StringEnum(['http', 'grpc'])),
  schedule: Type.Optional(Type.String({ maxLength: 100 })),
  time_zone: Type.Optional(Type.String({ maxLength: 100 })),
  job_start_policy: Type.Optional(StringEnum(JOB_START_POLICIES)),
  liveness_probe: Type.Optional(ProbeInput),
  readiness_probe: Type.Optional(ProbeInput),
  concurrency_policy: Type.Optional(StringEnum(CONCURRENCY_POLICIES)),
  max_run_time_seconds: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: MAX_INT4 }))),
});

// ---- Parameters and metric shapes -----------------------------------------------------------

export const AppParams = Type.Object({
  id: Uuid(),
});

export const ProcessParams = Type.Object({
  id: Uuid(),
  process_id: Uuid(),
});

export const ExitCodesQuery = Type.Object({
  from: DateTime(),
  to: DateTime(),
});

export const ExitCodePoint = Type.Object({
  time: DateTime(),
  value: Type.String(),
  description: Nullable(Type.String()),
});

// ---- Operations -----------------------------------------------------------------------------

export const listProcessesContract = {
  operationId: 'listProcessesV3',
  method: 'GET',
  path: '/applications/{id}/processes',
  summary: 'List processes',
  tags: ['Applications'],
  params: AppParams,
  querystring: PageQuery,
  success: 200,
  response: Paginated(Process),
  errors: [401, 403, 404, 500],
} as const;

export const createProcessContract = {
  operationId: 'createProcessV3',
  method: 'POST',
  path: '/applications/{id}/processes',
  summary: 'Create process',
  tags: ['Applications'],
  params: AppParams,
  body: CreateProcessBody,
  bodyRequired: true,
  success: 200,
  response: Process,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const getProcessContract = {
  operationId: 'getProcessV3',
  method: 'GET',
  path: '/applications/{id}/processes/{process_id}',
  summary: 'Get process',
  tags: ['Applications'],
  params: ProcessParams,
  success: 200,
  response: Process,
  errors: [401, 403, 404, 500],
} as const;

export const updateProcessContract = {
  operationId: 'updateProcessV3',
  method: 'PATCH',
  path: '/applications/{id}/processes/{process_id}',
  summary: 'Update process',
  tags: ['Applications'],
  params: ProcessParams,
  body: UpdateProcessBody,
  bodyRequired: true,
  success: 200,
  response: Process,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const deleteProcessContract = {
  operationId: 'deleteProcessV3',
  method: 'DELETE',
  path: '/applications/{id}/processes/{process_id}',
  summary: 'Delete process',
  tags: ['Applications'],
  params: ProcessParams,
  success: 200,
  response: MessageResponse,
  errors: [400, 401, 403, 404, 429, 500],
} as const;

export const triggerProcessCronContract = {
  operationId: 'triggerProcessCronV3',
  method: 'POST',
  path: '/applications/{id}/processes/{process_id}/trigger',
  summary: 'Trigger process cron',
  tags: ['Applications'],
  params: ProcessParams,
  success: 200,
  response: MessageResponse,
  errors: [401, 403, 404, 429, 500],
} as const;

const metricContract = (operationId: string, metric: string, summary: string) =>
  ({
    operationId,
    method: 'GET',
    path: `/applications/{id}/processes/{process_id}/metrics/${metric}`,
    summary,
    tags: ['Applications'],
    params: ProcessParams,
    querystring: MetricWindowQuery,
    success: 200,
    response: MetricSeries,
    errors: [401, 403, 404, 500],
  }) as const;

export const getProcessCpuUsageContract = metricContract('getProcessCpuUsageV3', 'cpu-usage', 'Get process cpu usage');
export const getProcessCpuLimitContract = metricContract('getProcessCpuLimitV3', 'cpu-limit', 'Get process cpu limit');
export const getProcessMemoryUsageContract = metricContract('getProcessMemoryUsageV3', 'memory-usage', 'Get process memory usage');
export const getProcessMemoryLimitContract = metricContract('getProcessMemoryLimitV3', 'memory-limit', 'Get process memory limit');
export const getProcessInstanceCountContract = metricContract('getProcessInstanceCountV3', 'instance-count', 'Get process instance count');

export const getProcessExitCodesContract = {
  operationId: 'getProcessExitCodesV3',
  method: 'GET',
  path: '/applications/{id}/processes/{process_id}/metrics/exit-codes',
  summary: 'Get process exit codes',
  tags: ['Applications'],
  params: ProcessParams,
  querystring: ExitCodesQuery,
  success: 200,
  response: Type.Array(ExitCodePoint),
  errors: [400, 401, 403, 404, 500],
} as const;

// ---- Terminal -------------------------------------------------------------------------------

export const TERMINAL_SHELLS = ['sh', 'bash', 'dash', 'ksh', 'zsh', 'csh', 'tcsh'] as const;

/** A WebSocket endpoint: 101 on upgrade, 426 for a plain HTTP request. */
export const openTerminalContract = {
  operationId: 'openTerminalV3',
  method: 'GET',
  path: '/applications/{id}/processes/{process_id}/terminal',
  summary: 'Open terminal session (WebSocket)',
  tags: ['Applications'],
  params: ProcessParams,
  querystring: Type.Object({
    shell: Type.Optional(StringEnum(TERMINAL_SHELLS, { default: 'sh' })),
  }),
  success: 101,
  errors: [401, 403, 404, 426, 500],
} as const;
