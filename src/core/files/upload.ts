import { randomUUID } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { chmod, chown, lstat, mkdir, open, rename, rm, stat, unlink } from 'node:fs/promises';
import { join, posix } from 'node:path';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { FastifyRequest } from 'fastify';
import { Errors } from '../../platform/server/errors.js';
import type { Entry, SessionFolder } from './confine.js';
import { copyBytes, type Owner, replaceFile } from './entry-ops.js';
import { fsError } from './session-files.js';
import { checkQuota, recordQuota } from './quota.js';

interface Received {
  tmp: string;
  filename: string;
}

export interface UploadLimits {
  /** Bytes of one file. */
  file: number;
  /** Files of one request. */
  files: number;
  /** Bytes of all files of one request. */
  total: number;
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
  // Only latin1 code points, and at least one past ASCII: possibly UTF-8 bytes read as latin1.
  if (!/[\u0080-\u00ff]/.test(name) || [...name].some((c) => c.charCodeAt(0) > 0xff)) return name;
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

/** An uploaded file's mode: what a write in the computer makes (0666 less the usual umask 022). */
const FILE_MODE = 0o644;

/**
 * Move the temp file onto the walked entry (rename replaces a name, never follows it); the bytes
 * it adds are counted against the quota (a copy across file systems is counted by replaceFile).
 * A new file gets the normal mode and the computer's user (`owner`); a replaced one keeps its
 * mode and owner. The temp file is in the service's private folder: changed by path there.
 */
async function moveInto(tmp: string, dest: Entry, owner?: Owner): Promise<void> {
  const size = (await stat(tmp)).size;
  const prev = await lstat(dest.path).catch(() => null);
  const old = prev?.isFile() ? prev.size : 0;
  const keep = prev?.isFile() ? { mode: prev.mode & 0o7777, uid: prev.uid, gid: prev.gid } : null;
  await chmod(tmp, keep?.mode ?? FILE_MODE);
  const to = keep && process.getuid?.() === 0 ? keep : owner;
  if (to) await chown(tmp, to.uid, to.gid);
  try {
    await rename(tmp, dest.path);
    recordQuota(dest.account, size - old);
  } catch (e) {
    if (e.code !== 'EXDEV') throw e;
    const src = await open(tmp, 'r');
    await replaceFile(dest, (fh) => copyBytes(src, fh), { mode: FILE_MODE, owner }).finally(() => src.close());
    await unlink(tmp);
  }
}

/**
 * Receive a multipart upload into `dirRel` of the workspace. Every file is streamed to a private
 * temp file first; only when all of them arrived within the limits (bytes of one file, number of
 * files, bytes of all files) and every target path is confined are they moved into place, so a
 * refused upload leaves nothing behind. Files and folders it makes are handed to `owner` (the
 * computer's user), files with mode 0644.
 */
export async function receiveUpload(req: FastifyRequest, folder: SessionFolder, dirRel: string, tmpRoot: string, limits: UploadLimits, owner?: Owner): Promise<UploadOutcome> {
  const tmpDir = join(tmpRoot, randomUUID());
  await mkdir(tmpDir, { recursive: true, mode: 0o700 });
  const received: Received[] = [];
  let rawPaths: unknown;
  let over: string | null = null;
  let total = 0;
  // Counts every byte of the request's files; past the total nothing more is kept on disk.
  const meter = () =>
    new Transform({
      transform(chunk: Buffer, _enc, done) {
        total += chunk.length;
        if (total > limits.total) over ??= `the files are over the upload total of ${limits.total} bytes`;
        done(null, over ? undefined : chunk);
      },
    });
  try {
    try {
      for await (const part of req.parts()) {
        if (part.type === 'field') {
          if (part.fieldname === 'paths') rawPaths = part.value;
          continue;
        }
        const filename = utf8Name(part.filename || `file${received.length + 1}`);
        if (!over && received.length >= limits.files) over = `more than ${limits.files} files in one upload`;
        // After a limit is hit the rest is read and dropped, so the client gets its 413.
        if (over) {
          part.file.resume();
          continue;
        }
        const tmp = join(tmpDir, String(received.length));
        await pipeline(part.file, meter(), createWriteStream(tmp, { flags: 'wx', mode: 0o600 }));
        if (part.file.truncated) over ??= `${filename} is over the upload limit of ${limits.file} bytes`;
        received.push({ tmp, filename });
      }
    } catch (e) {
      if (e.code !== 'FST_REQ_FILE_TOO_LARGE' && e.code !== 'FST_FILES_LIMIT') throw e;
      over ??= e.code === 'FST_FILES_LIMIT' ? `more than ${limits.files} files in one upload` : `a file is over the upload limit of ${limits.file} bytes`;
    }
    if (over) throw Errors.tooLarge(`${over}; nothing was stored`);
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

      // The whole upload against the quota before any file moves in: all of it, or nothing.
      let total = 0;
      for (const t of targets) total += (await stat(t.tmp)).size;
      await checkQuota(folder.account, total);
      const out: UploadOutcome = { uploaded: [], failed: [] };
      for (const t of targets) {
        try {
          // Walked again, making folders through descriptors: a link raced in is not followed.
          const at = await s.walk(t.rel, { follow: true, mkdirs: true, owner });
          await moveInto(t.tmp, at, owner).finally(() => at.close());
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
