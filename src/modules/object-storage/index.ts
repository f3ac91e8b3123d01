// The object storage module's public entry: stored objects as streams (database backups live in
// buckets), and a bucket's CDN hostname for the edge (load balancers' bucket destinations).
export { deleteObjectKey, putObjectStream, readObjectStream } from './files.js';
export { bucketCdn } from './edge.js';
