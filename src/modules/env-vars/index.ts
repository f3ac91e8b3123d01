// The env-vars module's public entry. Deployments reach the environment through
// app.ports.environment (shared/runtime/environment.ts) instead.
export { resolveEnvironment, systemVariables } from './service.js';
