// The domains module's public entry: the hostname registry every kind names its services through,
// and the claims buckets' CDN hostnames use.
export { registerExisting, registerService, removeServiceDomains, routedHosts, systemHostname } from './registry.js';
export { claimantOf, claimedHostnameOf, claimedHostnamesOf, claimHostname, releaseHostname } from './service.js';
