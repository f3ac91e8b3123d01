// The static sites module's public entry: what other modules (env-vars) may use.
export { checkBranch } from './git.js';
export { findSite } from './find.js';
export { deployPush } from './deployments.js';
export { autoDeploySiteRows, type StaticSitesTable } from './storage.js';
