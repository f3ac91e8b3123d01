// Every scenario, in the order a run takes them: the reads before the writes that grow the
// tables, and the 100,000 seeded resources last but object storage and the edge (which needs no
// Slipway server).
import { type Scenario } from '../lib/bench.js';
import { coldStart } from './cold-start.js';
import { containers } from './containers.js';
import { deepOffset } from './deep-offset.js';
import { deployments } from './deployments.js';
import { edgeIdle } from './edge-idle.js';
import { edgeProxy } from './edge-proxy.js';
import { edgeStatic } from './edge-static.js';
import { keyValidate } from './key-validate.js';
import { listRead } from './list-read.js';
import { memory } from './memory.js';
import { objectStorage } from './object-storage.js';
import { projectCreates } from './project-creates.js';
import { webhooks } from './webhooks.js';

export const scenarios: Scenario[] = [
  coldStart,
  listRead,
  keyValidate,
  projectCreates,
  deployments,
  webhooks,
  deepOffset,
  memory,
  objectStorage,
  edgeProxy,
  edgeStatic,
  edgeIdle,
  containers,
];
