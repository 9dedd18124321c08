import { createReadStream, createWriteStream } from 'node:fs';
import { rename, rm, stat } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import { Readable, Transform } from 'node:stream';
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

const LOCAL_HEADER = Buffer.from([0x50, 0x4b, 0x03, 0x04]);

/**
 * Counts local file headers as the archive streams by, for the progress line only (a stored file
 * could contain the signature; the count shown is capped by the announced total, and the final
 * figures come from the central directory once the file is complete).
 */
function counter(onChunk: (bytes: number, headers: number) => void): Transform {
  let carry: Buffer = Buffer.alloc(0);
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      const buf = carry.length ? Buffer.concat([carry, chunk]) : chunk;
      let n = 0;
      for (let i = buf.indexOf(LOCAL_HEADER); i >= 0; i = buf.indexOf(LOCAL_HEADER, i + 4)) n++;
      carry = buf.subarray(Math.max(0, buf.length - 3));
      onChunk(chunk.length, n);
      cb(null, chunk);
    },
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
 * GET .../export into `file` (written as `file.part`, renamed when complete and readable as a ZIP;
 * removed on any failure), or to stdout when `file` is "-".
 */
export async function downloadExport(api: Api, sessionId: string, file: string, progress: Progress): Promise<ExportResult> {
  const res = await api.send('GET', `/api/sessions/${encodeURIComponent(sessionId)}/export`, { headers: { accept: 'application/zip' } });
  const totalEntries = Number(res.headers.get('x-archive-entries')) || null;
  const unpacked = Number(res.headers.get('x-archive-bytes')) || 0;
  if (!res.body) throw new ClientError('protocol', 'the export answered no body');
  let bytes = 0;
  let entries = 0;
  const count = counter((b, h) => {
    bytes += b;
    entries += h;
    progress.update({ bytes, entries: totalEntries ? Math.min(entries, totalEntries) : entries, totalEntries });
  });
  const body = Readable.fromWeb(res.body as import('node:stream/web').ReadableStream);
  if (file === '-') {
    await pipeline(body, count, process.stdout);
    progress.finish({ entries: totalEntries ?? entries });
    return { session_id: sessionId, file, bytes, entries: totalEntries ?? entries, unpacked_bytes: unpacked };
  }
  const part = `${file}.${randomBytes(4).toString('hex')}.part`;
  try {
    await pipeline(body, count, createWriteStream(part, { flags: 'wx', mode: 0o600 }));
    const summary = await zipSummary(part).catch(() => {
      throw new ClientError('protocol', 'the export was cut short (the archive is incomplete); try again');
    });
    await rename(part, file);
    progress.finish({ bytes, entries: summary.entries, totalEntries: summary.entries });
    return { session_id: sessionId, file, bytes, entries: summary.entries, unpacked_bytes: summary.bytes };
  } catch (e) {
    progress.clear();
    await rm(part, { force: true });
    if (e instanceof ClientError) throw e;
    throw new ClientError('down', `the export was interrupted: ${(e as Error).message}`);
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
  return { body: Readable.toWeb(Readable.from(parts())) as unknown as BodyInit, type: `multipart/form-data; boundary=${boundary}`, length: head.length + size + tail.length };
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
    const res = await api.send('POST', `/api/sessions/${preview ? 'preview-import' : 'import'}`, {
      headers: { 'content-type': mp.type, 'content-length': String(mp.length) },
      body: mp.body,
      duplex: 'half',
    });
    const out = (await res.json()) as Record<string, unknown>;
    progress.finish({ bytes: st.size, phase: 'done' });
    return out;
  } catch (e) {
    progress.clear();
    throw e;
  }
}
