// The resources module's public entry: the catalog of clusters and resource types.
export {
  CLUSTER_BY_ID,
  DATABASE_RESOURCE_TYPE_BY_ID,
  DATABASE_RESOURCE_TYPES,
  PROCESS_RESOURCE_TYPE_BY_ID,
  PROCESS_RESOURCE_TYPES,
  type ProcessResourceType,
} from './catalog.js';
