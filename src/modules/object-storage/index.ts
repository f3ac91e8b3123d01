// The object storage module's public entry: stored objects as streams (database backups live in
// buckets), a bucket's CDN hostname for the edge (load balancers' bucket destinations), and the
// objects' bytes in state snapshots (src/shared/snapshots, called by the admin surface and the CLI).
export { deleteObjectKey, putObjectStream, readObjectStream } from './files.js';
export { bucketUpstream } from './edge.js';
export { snapshotObjects } from './snapshot.js';
