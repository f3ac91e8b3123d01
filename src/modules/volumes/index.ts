// The volumes module's public entry: what other modules may use. Runtime drivers of applications
// use the port instead (`app.ports.volumes`, applications/volumes-port.ts), since applications
// cannot import this module built on it.
export { volumesOf } from './service.js';
