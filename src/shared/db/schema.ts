// Table types for the query layer. Booleans are stored as 0/1 integers and timestamps as
// ISO-8601 UTC strings so that SQLite and PostgreSQL behave the same.
export interface CompaniesTable {
  id: string;
  name: string;
  status: 'active' | 'suspended' | 'maintenance';
  created_at: string;
  updated_at: string;
}

export interface UsersTable {
  id: string;
  company_id: string;
  email: string;
  full_name: string;
  image: string;
  created_at: string;
}

export interface ApiKeysTable {
  id: string;
  company_id: string;
  name: string;
  source: 'DASHBOARD' | 'CLI' | 'EXTERNAL';
  token_hash: string;
  masked_token: string;
  old_token_hash: string | null;
  old_token_expired_at: string | null;
  is_enabled: number;
  role_ids: string;
  capabilities: string;
  expired_at: string | null;
  last_used_at: string | null;
  created_at: string;
  updated_at: string;
  deleted_at: string | null;
}

export interface ProjectsTable {
  id: string;
  company_id: string;
  name: string;
  display_name: string;
  created_at: string;
  updated_at: string;
}

export interface ProjectServicesTable {
  project_id: string;
  service_id: string;
  service_type: string;
  company_id: string;
  created_at: string;
}

export interface DeviceCodesTable {
  code: string;
  client_ip: string;
  status: 'pending' | 'approved' | 'denied';
  expires_at: string;
  company_id: string | null;
  api_key_id: string | null;
  token_enc: string | null;
  created_at: string;
}

export interface RateWindowsTable {
  bucket: string;
  window_start: number;
  count: number;
}

export interface IdempotencyKeysTable {
  company_id: string;
  key: string;
  fingerprint: string;
  status_code: number | null;
  body: string | null;
  created_at: string;
}

export interface SettingsTable {
  key: string;
  value: string;
}

export interface JobsTable {
  id: string;
  kind: string;
  payload: string;
  status: 'queued' | 'running' | 'done' | 'failed' | 'cancelled';
  run_at: string;
  attempts: number;
  max_attempts: number;
  lease_owner: string | null;
  lease_expires_at: string | null;
  last_error: string | null;
  /** The resource the job works on (e.g. a deployment id), for cancellation and lookups. */
  subject_id: string | null;
  /** The W3C traceparent of the span that queued the job, when tracing: its runs continue that trace. */
  traceparent: string | null;
  created_at: string;
  updated_at: string;
}

/** Tables of the foundation; resource modules add theirs by declaration merging on this interface. */
export interface DB {
  jobs: JobsTable;
  companies: CompaniesTable;
  users: UsersTable;
  api_keys: ApiKeysTable;
  projects: ProjectsTable;
  project_services: ProjectServicesTable;
  device_codes: DeviceCodesTable;
  rate_windows: RateWindowsTable;
  idempotency_keys: IdempotencyKeysTable;
  settings: SettingsTable;
  auth_generation: AuthGenerationTable;
}

/** One row counting changes to API keys and companies (triggers; src/shared/auth/keycache.ts). */
export interface AuthGenerationTable {
  id: number;
  n: number;
}

export interface SimProgressionTable {
  operation: string;
  setting: string;
}

export interface SimFaultsTable {
  id: string;
  operation: string;
  target_id: string | null;
  phase: string | null;
  probability: string;
  remaining: number | null;
  message: string;
  created_at: string;
}

export interface RuntimeLogsTable {
  id: string;
  company_id: string;
  /** The service the lines belong to: an application or a static site (ids are UUIDs; no foreign key). */
  app_id: string;
  /** `build` lines belong to a deployment; `runtime` lines to the running service. */
  kind: 'build' | 'runtime';
  deployment_id: string | null;
  process_id: string | null;
  severity: string;
  message: string;
  ts: string;
  seq: number;
  attributes: string;
}

/** One request the HTTP edge answered (src/shared/edge/traffic.ts). */
export interface EdgeRequestsTable {
  id: string;
  /** The application, static site or load balancer that answered (no foreign key: records outlive nothing but their retention). */
  service_id: string;
  company_id: string;
  at_ms: number;
  method: string;
  path: string;
  status: number;
  bytes: number;
  duration_ms: number;
  client_ip: string;
  host: string;
  user_agent: string;
  referer: string;
  country: string | null;
  cached: number;
}

export interface DB {
  edge_requests: EdgeRequestsTable;
  sim_progression: SimProgressionTable;
  sim_faults: SimFaultsTable;
  runtime_logs: RuntimeLogsTable;
}
