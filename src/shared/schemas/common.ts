// Schema building blocks shared by every module. Each module's schemas.ts composes these;
// the same objects validate requests, serialize responses and feed the served OpenAPI document.
import { Type, type TSchema, type SchemaOptions, type TUnsafe } from '@sinclair/typebox';

export const Uuid = (options: SchemaOptions = {}) => Type.String({ format: 'uuid', ...options });
export const DateTime = (options: SchemaOptions = {}) => Type.String({ format: 'date-time', ...options });
export const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()]);
export const StringEnum = <const T extends readonly string[]>(values: T, options: SchemaOptions = {}): TUnsafe<T[number]> =>
  Type.Unsafe<T[number]>({ type: 'string', enum: [...values], ...options });
/** The largest value an `integer` column holds (PostgreSQL's int4): the bound of a request integer stored in one. */
export const MAX_INT4 = 2_147_483_647;

/**
 * Marks a shape used by several operations: the served OpenAPI document lists it once under
 * `components.schemas.<name>` and refers to it with `$ref` (validation ignores the marker).
 */
export const COMPONENT = 'x-component';
export const named = <T extends TSchema>(name: string, schema: T): T => Object.assign(schema, { [COMPONENT]: name });

/** The error body of the contract: `{message, status, data?: {code?, message?}}`. */
export const ErrorBody = named(
  'Error',
  Type.Object(
    {
      message: Type.String(),
      status: Type.Integer(),
      data: Type.Optional(Type.Object({ code: Type.Optional(Type.String()), message: Type.Optional(Type.String()) }, { additionalProperties: false })),
    },
    { additionalProperties: false },
  ),
);

/** Schema-mismatch body on operations whose contract lists no 400 response: carries `data.issues`. */
export const ValidationErrorBody = named(
  'ValidationError',
  Type.Object(
    {
      message: Type.String(),
      status: Type.Integer(),
      data: Type.Object(
        { issues: Type.Array(Type.Object({ path: Type.String(), message: Type.String() }, { additionalProperties: false })) },
        { additionalProperties: false },
      ),
    },
    { additionalProperties: false },
  ),
);

export const PaginationQuery = {
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 100, default: 25 })),
  offset: Type.Optional(Type.Integer({ minimum: 0, maximum: 10000, default: 0 })),
};

/** The list envelope `{data, total, offset, limit}` around an item schema. */
export const Paginated = <T extends TSchema>(item: T) =>
  Type.Object(
    {
      data: Type.Array(item),
      total: Type.Integer({ minimum: 0, maximum: 10000 }),
      offset: Type.Integer({ minimum: 0, maximum: 10000 }),
      limit: Type.Integer({ minimum: 1, maximum: 100 }),
    },
    { additionalProperties: false },
  );

/** The query of a list operation that only pages. */
export const PageQuery = Type.Object({ ...PaginationQuery });

export const MessageResponse = named('Message', Type.Object({ message: Type.String() }, { additionalProperties: false }));
export const IdParams = Type.Object({ id: Uuid() });

/** One log line as the logs endpoints return it. */
export const LogEntry = named(
  'LogEntry',
  Type.Object(
    {
      id: Type.String(),
      message: Type.String(),
      service: Type.String(),
      severity: Type.String(),
      timestamp: Type.String(),
      tags: Type.Record(Type.String(), Type.Unknown()),
      attributes: Type.Record(Type.String(), Type.Unknown()),
      unix_timestamp: Type.Number(),
    },
    { additionalProperties: false },
  ),
);

/** Query of the logs endpoints. */
export const LogQuery = Type.Object({
  from: Type.Optional(DateTime()),
  to: Type.Optional(DateTime()),
  filters: Type.Optional(Type.String()),
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 5000, default: 1000 })),
});

/** What every logs operation takes and answers; a logs contract spreads it after its path and params. */
export const LogsOperation = {
  querystring: LogQuery,
  success: 200,
  response: Type.Array(LogEntry),
  errors: [400, 401, 403, 404, 429, 500],
} as const;

/** The path parameters of one deployment of a service (application, static site). */
export const DeploymentParams = Type.Object({
  id: Uuid(),
  deployment_id: Uuid(),
});

/** One point of a metric series. */
export const MetricPoint = named('MetricPoint', Type.Object({ time: Type.String(), value: Type.Number() }, { additionalProperties: false }));

/** A metric series and the window it is asked for (resource metrics of processes and databases). */
export const MetricSeries = Type.Array(MetricPoint);
export const MetricWindowQuery = Type.Object({
  from: DateTime(),
  to: DateTime(),
  interval_in_seconds: Type.Integer({ exclusiveMinimum: 0 }),
});

/** An IP restriction (applications and databases): one allowlist or denylist at a time. */
export const IpRestriction = named(
  'IpRestriction',
  Type.Object({ type: StringEnum(['allow', 'deny']), is_enabled: Type.Boolean(), ip_list: Type.Array(Type.String()) }, { additionalProperties: false }),
);
export const IpRestrictionBody = Type.Object({
  type: StringEnum(['allow', 'deny']),
  is_enabled: Type.Boolean(),
  ip_list: Type.Array(Type.String({ maxLength: 45 }), { maxItems: 500 }),
});
