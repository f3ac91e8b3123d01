// The applications module's public entry: what other modules may use (the modules built on it:
// processes, env-vars, pipelines). What it needs from them comes through ports.ts.
export { deployPushedCommit, deployReleaseOnto } from './deployments.js';
export { currentRelease, lastDeployedAt } from './deployments-storage.js';
export { findApp, findLiveApp } from './find.js';
export { Application } from './schemas.js';
export { cloneApp, deleteApp, setAppProject, type CloneAs } from './service.js';
export { appById, autoDeployAppRows, type ApplicationsTable } from './storage.js';
export type { ServingProcess } from './ports.js';
