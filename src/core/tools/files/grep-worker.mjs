// Grep's matching, in a worker thread: the model's pattern runs on a JavaScript RegExp, which can
// backtrack exponentially (`^(a+)+$`). Here that only costs this thread, which the tool
// terminates at its time limit; the service's event loop never runs the pattern.
// Plain .mjs (copied to dist as is) so it loads the same from sources and from the build.
import { closeSync, constants, fstatSync, openSync, readSync } from 'node:fs';
import { parentPort, workerData } from 'node:worker_threads';

const { files, pattern, flags, content, limit, maxFileBytes, maxTotalBytes, maxLineChars, shownLineChars } = workerData;
const re = new RegExp(pattern, flags);
const buf = Buffer.allocUnsafe(maxFileBytes);
const hits = []; // [file index, matching line count, [line number, text][]]
let entries = 0, scanned = 0, cutFiles = 0, longLines = 0, skippedFiles = 0;

function read(path) {
  let fd;
  try {
    // O_NOFOLLOW: a file swapped for a symlink since the walk is not followed out of the workspace.
    fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW);
    const size = fstatSync(fd).size;
    const n = readSync(fd, buf, 0, Math.min(size, maxFileBytes), 0);
    if (size > maxFileBytes) cutFiles++;
    return buf.subarray(0, n);
  } catch {
    return null;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

for (let f = 0; f < files.length && entries < limit; f++) {
  if (scanned >= maxTotalBytes) {
    skippedFiles = files.length - f;
    break;
  }
  const data = read(files[f]);
  if (!data || data.subarray(0, 8000).includes(0)) continue;
  scanned += data.length;
  const lines = data.toString('utf8').split('\n');
  let count = 0;
  const shown = [];
  for (let i = 0; i < lines.length; i++) {
    let line = lines[i];
    if (line.length > maxLineChars) {
      longLines++;
      line = line.slice(0, maxLineChars);
    }
    if (!re.test(line)) continue;
    count++;
    if (content) {
      shown.push([i + 1, line.slice(0, shownLineChars)]);
      if (++entries >= limit) break;
    }
  }
  if (!count) continue;
  if (!content) entries++;
  hits.push([f, count, shown]);
}

parentPort.postMessage({ hits, scanned, cutFiles, longLines, skippedFiles });
