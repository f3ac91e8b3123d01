// The projects module's public entry: placing services in projects and forgetting them.
export { forgetService, placeService, requireProject } from './service.js';
