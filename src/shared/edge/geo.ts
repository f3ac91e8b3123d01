// Where a client is, from the operator's trusted headers (settings: SLIPWAY_EDGE_GEO_HEADER with
// "lat,lon", SLIPWAY_EDGE_COUNTRY_HEADER with an ISO country code), and the great-circle distance
// that geographic load balancing uses. A country without coordinates is placed at its centroid
// (a small built-in table of the most common countries; others have no location).
import type { IncomingMessage } from 'node:http';
import type { EdgeSettings } from './settings.js';

export interface LatLon {
  lat: number;
  lon: number;
}

/** Approximate centroids (latitude, longitude) of common countries. */
const CENTROIDS: Record<string, [number, number]> = {
  US: [39.8, -98.6],
  CA: [56.1, -106.3],
  MX: [23.6, -102.6],
  BR: [-14.2, -51.9],
  AR: [-38.4, -63.6],
  CL: [-35.7, -71.5],
  CO: [4.6, -74.3],
  PE: [-9.2, -75.0],
  GB: [54.0, -2.0],
  IE: [53.4, -8.2],
  FR: [46.2, 2.2],
  DE: [51.2, 10.5],
  NL: [52.1, 5.3],
  BE: [50.5, 4.5],
  ES: [40.5, -3.7],
  PT: [39.4, -8.2],
  IT: [41.9, 12.6],
  CH: [46.8, 8.2],
  AT: [47.5, 14.6],
  PL: [51.9, 19.1],
  CZ: [49.8, 15.5],
  SE: [60.1, 18.6],
  NO: [60.5, 8.5],
  DK: [56.3, 9.5],
  FI: [61.9, 25.7],
  RU: [61.5, 105.3],
  UA: [48.4, 31.2],
  TR: [39.0, 35.2],
  GR: [39.1, 21.8],
  RO: [45.9, 25.0],
  IL: [31.0, 34.9],
  AE: [23.4, 53.8],
  SA: [23.9, 45.1],
  EG: [26.8, 30.8],
  NG: [9.1, 8.7],
  KE: [-0.0, 37.9],
  ZA: [-30.6, 22.9],
  IN: [20.6, 79.0],
  PK: [30.4, 69.3],
  CN: [35.9, 104.2],
  JP: [36.2, 138.3],
  KR: [35.9, 127.8],
  SG: [1.35, 103.8],
  ID: [-0.8, 113.9],
  TH: [15.9, 100.9],
  VN: [14.1, 108.3],
  PH: [12.9, 121.8],
  AU: [-25.3, 133.8],
  NZ: [-40.9, 174.9],
  HK: [22.3, 114.2],
  TW: [23.7, 121.0],
  MY: [4.2, 101.9],
};

const header = (req: IncomingMessage, name: string | null): string | null => {
  if (!name) return null;
  const v = req.headers[name];
  return (Array.isArray(v) ? v[0] : v)?.trim() || null;
};

/** An ISO 3166 alpha-2 code, upper case, from a country header's value; null when absent or unknown (`XX`). */
export function countryCode(v: string | null | undefined): string | null {
  const c = v?.trim().toUpperCase();
  return c && /^[A-Z]{2}$/.test(c) && c !== 'XX' ? c : null;
}

/** Parses "lat,lon" (degrees); null when malformed or out of range. */
export function parseLatLon(v: string): LatLon | null {
  const m = /^\s*(-?\d+(?:\.\d+)?)\s*[,; ]\s*(-?\d+(?:\.\d+)?)\s*$/.exec(v);
  if (!m) return null;
  const lat = Number(m[1]);
  const lon = Number(m[2]);
  return Math.abs(lat) <= 90 && Math.abs(lon) <= 180 ? { lat, lon } : null;
}

/** The client's country and location from the configured headers (each null when absent or unusable). */
export function clientGeo(req: IncomingMessage, s: Pick<EdgeSettings, 'geoHeader' | 'countryHeader'>): { country: string | null; location: LatLon | null } {
  const country = countryCode(header(req, s.countryHeader));
  const coords = header(req, s.geoHeader);
  const centroid = country ? CENTROIDS[country] : undefined;
  const location = (coords ? parseLatLon(coords) : null) ?? (centroid ? { lat: centroid[0], lon: centroid[1] } : null);
  return { country, location };
}

/** Great-circle distance in kilometres (haversine). */
export function distanceKm(a: LatLon, b: LatLon): number {
  const rad = Math.PI / 180;
  const dLat = (b.lat - a.lat) * rad;
  const dLon = (b.lon - a.lon) * rad;
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(a.lat * rad) * Math.cos(b.lat * rad) * Math.sin(dLon / 2) ** 2;
  return 2 * 6371 * Math.asin(Math.min(1, Math.sqrt(h)));
}

/**
 * For each country of the centroid table, the index of the point nearest its centroid (points
 * without a location are skipped), as a proxy that cannot compute distances per request looks it
 * up by the client's country; empty when no point has a location.
 */
export function nearestByCountry(points: (LatLon | null)[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [country, [lat, lon]] of Object.entries(CENTROIDS)) {
    let best = -1;
    let bestKm = Infinity;
    points.forEach((p, i) => {
      if (!p) return;
      const km = distanceKm({ lat, lon }, p);
      if (km < bestKm) [best, bestKm] = [i, km];
    });
    if (best >= 0) out[country] = best;
  }
  return out;
}
