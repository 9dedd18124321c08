// Serves index.html and forwards /api/ to agentsvc with the key added here, so the page holds no key
// and stays on one origin. Usage: AGENTSVC_KEY=sk-... [AGENTSVC_URL=http://127.0.0.1:8080] node serve.mjs
import { readFileSync } from 'node:fs';
import { createServer, request } from 'node:http';

const target = new URL(process.env.AGENTSVC_URL ?? 'http://127.0.0.1:8080');
const page = readFileSync(new URL('index.html', import.meta.url));
createServer((req, res) => {
  if (!req.url.startsWith('/api/')) return res.writeHead(200, { 'content-type': 'text/html' }).end(page);
  const headers = { ...req.headers, host: target.host, authorization: `Bearer ${process.env.AGENTSVC_KEY}` };
  const up = request(new URL(req.url, target), { method: req.method, headers }, (r) => {
    res.writeHead(r.statusCode, r.headers);
    r.pipe(res);
  });
  up.on('error', () => res.writeHead(502).end());
  req.pipe(up);
}).listen(8090, () => console.log('open http://127.0.0.1:8090'));
