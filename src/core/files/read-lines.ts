import type { FileHandle } from 'node:fs/promises';

export interface LineWindow {
  /** The lines asked for (without their newline), each cut to `maxLine` characters. */
  lines: string[];
  /** Which of them were cut. */
  cut: boolean[];
  /** Something follows the last line returned. */
  more: boolean;
  /** Lines seen in all when the file ended before the window (for "past the end"). */
  total: number;
  /** The file ended within the bytes read (false: the scan stopped at `maxBytes`). */
  ended: boolean;
}

const CHUNK = 64 * 1024;

/**
 * Lines `offset` .. `offset + limit - 1` (1-based) of an open file, read in chunks: reading stops as
 * soon as the window is complete, at most `maxBytes` are scanned, and only `4 * maxLine` bytes of
 * any line are kept, so a huge file or a one-line gigabyte costs bounded memory and time.
 */
export async function readLines(fh: FileHandle, offset: number, limit: number, maxLine: number, maxBytes: number): Promise<LineWindow> {
  const keep = maxLine * 4;
  const out: LineWindow = { lines: [], cut: [], more: false, total: 0, ended: false };
  const buf = Buffer.alloc(CHUNK);
  let line = 1;
  let parts: Buffer[] = [];
  let kept = 0;
  let cut = false;
  let pos = 0;
  let pending = false; // bytes of the current line seen
  const last = offset + limit - 1;
  const flush = () => {
    const text = Buffer.concat(parts).toString('utf8');
    out.lines.push(text.length > maxLine ? text.slice(0, maxLine) : text);
    out.cut.push(cut || text.length > maxLine);
    parts = [];
    kept = 0;
    cut = false;
  };
  while (pos < maxBytes) {
    const { bytesRead } = await fh.read(buf, 0, Math.min(CHUNK, maxBytes - pos), pos);
    if (bytesRead === 0) {
      out.ended = true;
      break;
    }
    pos += bytesRead;
    let start = 0;
    while (start < bytesRead) {
      if (line > last) {
        out.more = true;
        return out;
      }
      const nl = buf.indexOf(10, start);
      const end = nl === -1 || nl >= bytesRead ? bytesRead : nl;
      if (line >= offset && kept < keep) {
        const take = Math.min(end - start, keep - kept);
        parts.push(Buffer.from(buf.subarray(start, start + take)));
        kept += take;
        if (take < end - start) cut = true;
      } else if (line >= offset && end > start) cut = true;
      pending = true;
      if (end === bytesRead) break;
      if (line >= offset) flush();
      line++;
      pending = false;
      start = end + 1;
    }
  }
  // A last line without a final newline.
  if (pending && line >= offset && line <= last) {
    if (!out.ended) cut = true;
    flush();
  }
  out.total = pending ? line : line - 1;
  if (!out.ended && line <= last) out.more = true;
  return out;
}
