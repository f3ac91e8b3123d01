// The moment of a bucket's life that other modules react to, in the same transaction: the domains
// module frees its CDN hostname, load balancers drop their destinations to it.
declare module '../../shared/events.js' {
  interface SignalMap {
    /** The bucket is being deleted (its objects go with it). */
    'object-storage.removed': { bucketId: string };
  }
}

export {};
