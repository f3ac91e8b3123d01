// The object storage module's public entry: stored objects as streams (database backups live in buckets).
export { deleteObjectKey, putObjectStream, readObjectStream } from './files.js';
