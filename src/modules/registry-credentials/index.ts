// The registry credentials module's public entry: what other modules may use (a runtime driver
// pulling a private image with an application's credential).
export { registryLogin } from './service.js';
