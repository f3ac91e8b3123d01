// The device codes module's public entry: what other modules (admin) may use.
export { decide } from './service.js';
