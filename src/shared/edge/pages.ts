// The edge's own answers (not found, forbidden, maintenance, bad gateway) as small HTML pages.
import type { ServerResponse } from 'node:http';

export const escapeHtml = (s: string) => s.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);

export const page = (title: string, body: string) =>
  `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title></head><body><h1>${title}</h1><p>${body}</p></body></html>\n`;

export function sendPage(res: ServerResponse, status: number, html: string, headers: Record<string, string> = {}) {
  res.writeHead(status, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', ...headers });
  res.end(html);
}

/** 502 with the edge's page (or the connection dropped when a response had already begun). */
export function badGateway(res: ServerResponse, what = 'The service could not be reached.') {
  if (!res.headersSent) sendPage(res, 502, page('Bad gateway', what));
  else res.destroy();
}

/** The maintenance answer's page (the in-process edge sends it, the nginx driver writes it to a file): a link to the operator's page, or the edge's own. */
export function maintenancePage(url: string | null): string {
  return url
    ? `<!doctype html><html><head><meta charset="utf-8"><meta http-equiv="refresh" content="0; url=${escapeHtml(url)}"><title>Maintenance</title></head><body><p>This service is under maintenance: <a href="${escapeHtml(url)}">${escapeHtml(url)}</a></p></body></html>\n`
    : page('Under maintenance', 'This service is under maintenance. Please try again later.');
}
