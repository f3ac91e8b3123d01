// The applications module's public entry: what other modules may use (the modules built on it:
// processes, env-vars, pipelines). What it needs from them comes through ports.ts.
export { deployReleaseOnto, lastDeployedAt } from './deployments.js';
export { Application } from './schemas.js';
export { cloneApp, deleteApp, setAppProject } from './service.js';
export { appById, currentRelease, findApp, type ApplicationsTable } from './storage.js';
