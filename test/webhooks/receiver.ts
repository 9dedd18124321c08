import http from 'node:http';
import type { AddressInfo } from 'node:net';

export type Got = { headers: Record<string, string>; body: string; status: number };

/** A local webhook receiver: answers each request with `answer(n, body)` (n from 0) and keeps what it got. */
export async function receiver(t: { teardown(fn: () => unknown): void }, answer: (n: number, body: string) => number = () => 200) {
  const got: Got[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const status = answer(got.length, body);
      got.push({ headers: req.headers as Record<string, string>, body, status });
      res.writeHead(status).end();
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.teardown(() => new Promise((r) => server.close(r)));
  return { got, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook` };
}
