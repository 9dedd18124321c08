import { createReadStream, createWriteStream } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { type IncomingMessage, request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import yauzl from 'yauzl';
import { type Api, ClientError } from './api.js';
import type { Progress } from './progress.js';

/** How a ZIP looks from its central directory: entries and unpacked bytes. Not a ZIP: a ClientError. */
export function zipSummary(path: string): Promise<{ entries: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    yauzl.open(path, { lazyEntries: true, autoClose: true }, (e, zip) => {
      if (e || !zip) return reject(new ClientError('invalid', `${path} is not a readable ZIP archive (${e?.message ?? 'unknown error'})`));
      let bytes = 0;
      zip.on('entry', (entry: yauzl.Entry) => {
        bytes += entry.uncompressedSize;
        zip.readEntry();
      });
      zip.once('end', () => resolve({ entries: zip.entryCount, bytes }));
      zip.once('error', (err: Error) => reject(new ClientError('invalid', `${path} is not a readable ZIP archive (${err.message})`)));
      zip.readEntry();
    });
  });
}

export interface ExportResult {
  session_id: string;
  file: string;
  bytes: number;
  entries: number;
  unpacked_bytes: number;
}

/**
 * `method` `path` with node:http(s): plain Node streams, piped with backpressure (fetch's web
 * stream, bridged to a Node stream, cost 10-30 s of CPU on a 77 MiB archive), and no header
 * timeout: fetch gave up on an import after 300 s without an answer ("cannot reach agentsvc")
 * while the server went on importing. Non-2xx: the ClientError.
 */
async function request(api: Api, method: string, path: string, headers: Record<string, string>, body?: Readable): Promise<IncomingMessage> {
  const url = new URL(api.url + path);
  const all: Record<string, string> = { ...headers };
  if (api.target.key) all.authorization = `Bearer ${api.target.key}`;
  const res = await new Promise<IncomingMessage>((resolve, reject) => {
    const req = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, { method, headers: all }, resolve).once('error', (e) => reject(api.down({ cause: e })));
    if (!body) return req.end();
    body.once('error', (e) => req.destroy(e));
    body.pipe(req);
  });
  if (res.statusCode && res.statusCode < 300) return res;
  // Refused before the upload was read whole (413, 429): stop reading the file.
  body?.destroy();
  let text = '';
  for await (const c of res) text += c;
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: the status alone
  }
  throw api.failure(res.statusCode ?? 0, parsed, path);
}

/**
 * GET .../export into `file` (written as `file.<random>.part`, renamed when complete and readable as
 * a ZIP; removed on any failure and on Ctrl-C), or to stdout when `file` is "-". Progress counts
 * bytes against the archive's announced content size (the ZIP is mostly that, stored or deflated).
 */
export async function downloadExport(api: Api, sessionId: string, file: string, progress: Progress): Promise<ExportResult> {
  const res = await request(api, 'GET', `/api/sessions/${encodeURIComponent(sessionId)}/export`, { accept: 'application/zip' });
  const unpacked = Number(res.headers['x-archive-bytes']) || 0;
  const announced = Number(res.headers['x-archive-entries']) || 0;
  let bytes = 0;
  res.on('data', (c: Buffer) => {
    bytes += c.length;
    // Deflated entries make the archive smaller than its content: the line stops short of 100%.
    progress.update({ bytes, totalBytes: unpacked ? Math.max(unpacked, bytes) : null });
  });
  if (file === '-') {
    await pipeline(res, process.stdout);
    progress.finish();
    return { session_id: sessionId, file, bytes, entries: announced, unpacked_bytes: unpacked };
  }
  const part = `${file}.${randomBytes(4).toString('hex')}.part`;
  let interrupted = false;
  const onSigint = () => {
    interrupted = true;
    res.destroy(new Error('interrupted'));
  };
  process.once('SIGINT', onSigint);
  try {
    await pipeline(res, createWriteStream(part, { flags: 'wx', mode: 0o600 }));
    if (!res.complete) throw new ClientError('protocol', 'the export was cut short (the archive is incomplete); try again');
    const summary = await zipSummary(part).catch(() => {
      throw new ClientError('protocol', 'the export was cut short (the archive is incomplete); try again');
    });
    await rename(part, file);
    progress.finish({ bytes, totalBytes: bytes, entries: summary.entries, totalEntries: summary.entries });
    return { session_id: sessionId, file, bytes, entries: summary.entries, unpacked_bytes: summary.bytes };
  } catch (e) {
    progress.clear();
    await rm(part, { force: true });
    if (interrupted) throw new ClientError('invalid', `export interrupted; ${part} was removed`);
    if (e instanceof ClientError) throw e;
    throw new ClientError('down', `the export was interrupted: ${(e as Error).message}`);
  } finally {
    process.off('SIGINT', onSigint);
  }
}

/** A multipart/form-data body streamed from the file, with an exact content-length. */
function multipart(file: string, size: number, fields: Record<string, string>, onBytes: (n: number) => void) {
  const boundary = `----agentsvc${randomBytes(12).toString('hex')}`;
  const head = Buffer.from(
    Object.entries(fields)
      .map(([k, v]) => `--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`)
      .join('') + `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="archive.zip"\r\nContent-Type: application/zip\r\n\r\n`,
  );
  const tail = Buffer.from(`\r\n--${boundary}--\r\n`);
  async function* parts() {
    yield head;
    for await (const chunk of createReadStream(file, { highWaterMark: 256 * 1024 })) {
      onBytes((chunk as Buffer).length);
      yield chunk as Buffer;
    }
    yield tail;
  }
  return { body: Readable.from(parts(), { objectMode: false }), type: `multipart/form-data; boundary=${boundary}`, length: head.length + size + tail.length };
}

/**
 * Uploads a session archive to POST /api/sessions/import (or preview-import): checked as a ZIP
 * locally first (its entry count drives the progress line), streamed, never read whole.
 */
export async function uploadArchive(api: Api, file: string, fields: Record<string, string>, preview: boolean, progress: Progress): Promise<Record<string, unknown>> {
  const st = await stat(file).catch(() => null);
  if (!st?.isFile()) throw new ClientError('invalid', `${file}: no such file`);
  const summary = await zipSummary(file);
  let sent = 0;
  const mp = multipart(file, st.size, fields, (n) => {
    sent += n;
    progress.update({ bytes: sent, totalBytes: st.size, entries: summary.entries, phase: sent >= st.size ? (preview ? 'reading on the server' : 'unpacking on the server') : undefined });
  });
  progress.update({ bytes: 0, totalBytes: st.size, entries: summary.entries }, true);
  try {
    const path = `/api/sessions/${preview ? 'preview-import' : 'import'}`;
    const res = await request(api, 'POST', path, { accept: 'application/json', 'content-type': mp.type, 'content-length': String(mp.length) }, mp.body);
    let text = '';
    for await (const c of res) text += c;
    let out: Record<string, unknown>;
    try {
      out = JSON.parse(text) as Record<string, unknown>;
    } catch {
      throw new ClientError('protocol', `POST ${path}: the answer is not JSON; is ${api.url} an agentsvc service?`);
    }
    progress.finish({ bytes: st.size, phase: 'done' });
    return out;
  } catch (e) {
    progress.clear();
    throw e;
  }
}
