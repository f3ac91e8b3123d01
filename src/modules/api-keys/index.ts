// The API keys module's public entry: what other modules may use.
export { createKey } from './service.js';
