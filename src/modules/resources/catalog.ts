// Seeded reference data: regions (clusters) and resource sizes. Identifiers are stable across
// installs so clients and tests can hard-code them.
import { stableUuid } from '../../shared/ids.js';

export interface Cluster {
  id: string;
  name: string;
  display_name: string | null;
  location: string;
}

const cluster = (name: string, display: string, location: string): Cluster => ({ id: stableUuid(`cluster:${name}`), name, display_name: display, location });

export const CLUSTERS: Cluster[] = [
  cluster('us-central1', 'Iowa (us-central1)', 'us-central1'),
  cluster('us-east1', 'South Carolina (us-east1)', 'us-east1'),
  cluster('us-west1', 'Oregon (us-west1)', 'us-west1'),
  cluster('europe-west1', 'Belgium (europe-west1)', 'europe-west1'),
  cluster('europe-west3', 'Frankfurt (europe-west3)', 'europe-west3'),
  cluster('asia-southeast1', 'Singapore (asia-southeast1)', 'asia-southeast1'),
  cluster('australia-southeast1', 'Sydney (australia-southeast1)', 'australia-southeast1'),
];
export const CLUSTER_BY_ID = new Map(CLUSTERS.map((c) => [c.id, c]));
export const DEFAULT_CLUSTER = CLUSTERS[0]!;

export interface ProcessResourceType {
  id: string;
  name: string;
  cpu_limit: number;
  memory_limit: number;
  category: 'hobby' | 'standard' | 'cpuOptimized' | 'memoryOptimized';
}

const prt = (name: string, cpu: number, mem: number, category: ProcessResourceType['category']): ProcessResourceType => ({
  id: stableUuid(`process-resource-type:${name}`),
  name,
  cpu_limit: cpu,
  memory_limit: mem,
  category,
});

// cpu_limit in millicores, memory_limit in MiB.
export const PROCESS_RESOURCE_TYPES: ProcessResourceType[] = [
  prt('hobby', 300, 256, 'hobby'),
  prt('s1', 500, 1024, 'standard'),
  prt('s2', 1000, 2048, 'standard'),
  prt('s4', 2000, 4096, 'standard'),
  prt('s8', 4000, 8192, 'standard'),
  prt('c2', 2000, 2048, 'cpuOptimized'),
  prt('c4', 4000, 4096, 'cpuOptimized'),
  prt('m2', 1000, 8192, 'memoryOptimized'),
  prt('m4', 2000, 16384, 'memoryOptimized'),
];
export const PROCESS_RESOURCE_TYPE_BY_ID = new Map(PROCESS_RESOURCE_TYPES.map((t) => [t.id, t]));

export interface DatabaseResourceType {
  id: string;
  name: string;
  cpu_limit: number;
  memory_limit: number;
  storage_limit: number;
}

const drt = (name: string, cpu: number, mem: number, storage: number): DatabaseResourceType => ({
  id: stableUuid(`database-resource-type:${name}`),
  name,
  cpu_limit: cpu,
  memory_limit: mem,
  storage_limit: storage,
});

// cpu_limit in millicores, memory_limit and storage_limit in MiB.
export const DATABASE_RESOURCE_TYPES: DatabaseResourceType[] = [
  drt('db1', 250, 256, 1024),
  drt('db2', 500, 512, 5120),
  drt('db3', 1000, 1024, 10240),
  drt('db4', 2000, 4096, 51200),
  drt('db5', 4000, 8192, 102400),
];
export const DATABASE_RESOURCE_TYPE_BY_ID = new Map(DATABASE_RESOURCE_TYPES.map((t) => [t.id, t]));
