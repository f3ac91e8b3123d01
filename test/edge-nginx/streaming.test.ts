// Long-lived traffic through the edge's nginx: WebSocket upgrades, streamed responses passed on
// as they are written (not buffered), and a reload (a new host) while 20 streams are open drops none.
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import WebSocket, { WebSocketServer } from 'ws';
import { ask, host, nginxSkip, startApp, TestEdge, upstream } from './support.js';
import { waitFor } from '../helpers/util.js';
import type { EdgeHost } from '../../src/shared/edge/table.js';

const CHUNKS = 20;

describe('edge on nginx: WebSockets and streams', { skip: nginxSkip() }, () => {
  let edge: TestEdge;
  let hosts: EdgeHost[];
  const apps: Awaited<ReturnType<typeof startApp>>[] = [];
  let release: () => void = () => {};
  let held: Promise<void> = Promise.resolve();
  let heldEnded = false;

  before(async () => {
    // Answers /hold with one line, then waits for the test before the second; /stream with CHUNKS lines 50 ms apart.
    const streamer = await startApp('streamer', (req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      if (req.url === '/hold') {
        res.write('first\n');
        void held.then(() => {
          heldEnded = true;
          res.end('second\n');
        });
        return;
      }
      let n = 0;
      const timer = setInterval(() => {
        res.write(`chunk ${++n}\n`);
        if (n === CHUNKS) {
          clearInterval(timer);
          res.end();
        }
      }, 50);
      res.on('close', () => clearInterval(timer));
    });
    const echo = await startApp('echo');
    const wss = new WebSocketServer({ server: echo.server });
    wss.on('connection', (ws, req) => {
      ws.send(`hello ${req.headers.host}`);
      ws.on('message', (m) => ws.send(`echo ${String(m)}`));
    });
    apps.push(streamer, echo);
    edge = await TestEdge.create();
    hosts = [host('stream.test', upstream(streamer.port)), host('ws.test', upstream(echo.port))];
    await edge.apply(hosts);
  });

  after(async () => {
    release();
    await edge?.stop();
    for (const a of apps) await a.close();
  });

  it('passes WebSocket upgrades through', async () => {
    const ws = new WebSocket(`ws://127.0.0.1:${edge.http.port}/socket`, { headers: { host: 'ws.test' } });
    const messages: string[] = [];
    ws.on('message', (m) => messages.push(String(m)));
    await new Promise<void>((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
    });
    ws.send('ping');
    await waitFor('the echo', () => messages.length >= 2, 5000);
    assert.deepEqual(messages, ['hello ws.test', 'echo ping']);
    ws.close();
  });

  it('passes a streamed response on as it is written', async () => {
    held = new Promise<void>((r) => (release = r));
    heldEnded = false;
    const body = await new Promise<string>((resolve, reject) => {
      const req = request({ host: '127.0.0.1', port: edge.http.port, path: '/hold', headers: { host: 'stream.test' }, agent: false }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => {
          text += c;
          if (text === 'first\n') {
            // The first line arrived while the app is still holding the rest.
            assert.equal(heldEnded, false);
            release();
          }
        });
        res.on('end', () => resolve(text));
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end();
    });
    assert.equal(body, 'first\nsecond\n');
  });

  it('drops none of 20 open streams when the configuration is reloaded', async () => {
    let started = 0;
    const streams = Array.from(
      { length: 20 },
      () =>
        new Promise<{ status: number; text: string }>((resolve, reject) => {
          const req = request({ host: '127.0.0.1', port: edge.http.port, path: '/stream', headers: { host: 'stream.test' }, agent: false }, (res) => {
            let text = '';
            let counted = false;
            res.setEncoding('utf8');
            res.on('data', (c: string) => {
              text += c;
              if (!counted) started += Number((counted = true));
            });
            res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
            res.on('error', reject);
            res.on('aborted', () => reject(new Error('stream aborted')));
          });
          req.on('error', reject);
          req.end();
        }),
    );
    await waitFor('every stream to begin', () => started === 20, 10_000);
    const generation = edge.generation;
    hosts = [...hosts, host('new.test', upstream(apps[0]!.port))];
    await edge.apply(hosts);
    assert.equal(await edge.nginx.generation(), generation + 1);
    assert.equal((await ask(edge.http.port, 'new.test', { path: '/hold-not' })).status, 200);
    const done = await Promise.all(streams);
    const expected = Array.from({ length: CHUNKS }, (_, i) => `chunk ${i + 1}\n`).join('');
    for (const d of done) {
      assert.equal(d.status, 200);
      assert.equal(d.text, expected);
    }
  });
});
