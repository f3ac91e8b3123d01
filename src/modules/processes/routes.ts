import type { Operation } from '../../shared/http/operation.js';

// Placeholder: operations of this module are being written.
export const operations: Operation[] = [];
