import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, open, rename, rm, unlink } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { FastifyRequest } from 'fastify';
import { Errors } from '../server/errors.js';
import type { Entry, SessionFolder } from './confine.js';
import { copyBytes, openWrite } from './entry-ops.js';
import { fsError } from './session-files.js';

interface Received {
  tmp: string;
  filename: string;
}

export interface UploadOutcome {
  uploaded: string[];
  failed: { name: string; error: string }[];
}

/**
 * busboy reads header parameters as latin1; clients (browsers, undici, curl) send UTF-8 bytes.
 * Re-read them as UTF-8 when that is what they are.
 */
function utf8Name(name: string): string {
  if (!/[\u0080-\u00ff]/.test(name) || /[^\u0000-\u00ff]/.test(name)) return name;
  const bytes = Buffer.from(name, 'latin1');
  const text = bytes.toString('utf8');
  return Buffer.from(text, 'utf8').equals(bytes) ? text : name;
}

function parsePaths(raw: unknown, count: number): string[] | null {
  if (raw === undefined) return null;
  let value = raw;
  if (typeof raw === 'string') {
    if (raw.trim() === '') return null;
    try {
      value = JSON.parse(raw);
    } catch {
      throw Errors.invalid(['body', 'paths'], 'must be a JSON array of relative paths');
    }
  }
  if (!Array.isArray(value) || !value.every((p) => typeof p === 'string' && p.length > 0 && p.length <= 4096))
    throw Errors.invalid(['body', 'paths'], 'must be a JSON array of non-empty path strings');
  if (value.length !== count) throw Errors.invalid(['body', 'paths'], `has ${value.length} entries for ${count} files`);
  return value;
}

/** Move the temp file onto the walked entry (rename replaces a name, never follows it). */
async function moveInto(tmp: string, dest: Entry): Promise<void> {
  try {
    await rename(tmp, dest.path);
  } catch (e) {
    if (e.code !== 'EXDEV') throw e;
    const w = await openWrite(dest);
    try {
      await w.fh.truncate(0);
      const src = await open(tmp, 'r');
      await copyBytes(src, w.fh).finally(() => src.close());
    } finally {
      await w.fh.close();
    }
    await unlink(tmp);
  }
}

/**
 * Receive a multipart upload into `dirRel` of the workspace. Every file is streamed to a private
 * temp file first; only when all of them arrived within the size limit and every target path is
 * confined are they moved into place, so a refused upload leaves nothing behind.
 */
export async function receiveUpload(req: FastifyRequest, folder: SessionFolder, dirRel: string, tmpRoot: string, limit: number): Promise<UploadOutcome> {
  const tmpDir = join(tmpRoot, randomUUID());
  await mkdir(tmpDir, { recursive: true, mode: 0o700 });
  const received: Received[] = [];
  let rawPaths: unknown;
  let tooLarge: string | null = null;
  try {
    try {
      for await (const part of req.parts()) {
        if (part.type === 'field') {
          if (part.fieldname === 'paths') rawPaths = part.value;
          continue;
        }
        const filename = utf8Name(part.filename || `file${received.length + 1}`);
        // After a file over the limit the rest is read and dropped, so the client gets its 413.
        if (tooLarge) {
          part.file.resume();
          continue;
        }
        const tmp = join(tmpDir, String(received.length));
        await pipeline(part.file, createWriteStream(tmp, { flags: 'wx', mode: 0o600 }));
        if (part.file.truncated) tooLarge = filename;
        received.push({ tmp, filename });
      }
    } catch (e) {
      if (e.code !== 'FST_REQ_FILE_TOO_LARGE') throw e;
      tooLarge ??= 'a file';
    }
    if (tooLarge) throw Errors.tooLarge(`${tooLarge} is over the upload limit of ${limit} bytes; nothing was stored`);
    if (received.length === 0) throw Errors.invalid(['body', 'files'], 'at least one file is required');
    const paths = parsePaths(rawPaths, received.length);

    return await folder.with(async (s) => {
      // Resolve every target before moving anything: one path out of the workspace refuses them all.
      const targets = [];
      for (const [i, r] of received.entries()) {
        const name = paths ? paths[i] : r.filename;
        const p = name.startsWith('/') ? name : posix.join(dirRel || '.', name);
        let rel: string;
        try {
          const at = await s.walk(p, { follow: true });
          rel = at.rel;
          await at.close();
        } catch (e) {
          // Folders still to be made: nothing there can lead out (links were followed up to them).
          if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
          rel = s.components(p).join('/');
        }
        if (rel === '' || rel === dirRel) throw Errors.invalid(['body', 'paths', i], `${name} does not name a file`);
        targets.push({ rel, name, tmp: r.tmp });
      }

      const out: UploadOutcome = { uploaded: [], failed: [] };
      for (const t of targets) {
        try {
          // Walked again, making folders through descriptors: a link raced in is not followed.
          const at = await s.walk(t.rel, { follow: true, mkdirs: true });
          await moveInto(t.tmp, at).finally(() => at.close());
          out.uploaded.push(at.rel);
        } catch (e) {
          const err = fsError(e);
          out.failed.push({ name: t.name, error: err.message });
        }
      }
      return out;
    });
  } finally {
    await rm(tmpDir, { recursive: true, force: true });
  }
}
