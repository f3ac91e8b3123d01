import type { AppContext } from '../../shared/context.js';
import type { Operation } from '../../shared/http/operation.js';

export const operations: Operation[] = [];
export function setup(_app: AppContext): void {}
