import { useEffect, useState } from 'preact/hooks';
import { ApiError, type Entry, rest } from '../api.js';
import { errorText } from '../errors.js';
import { Notice } from './notice.js';

/** A session's workspace files: browse folders, upload into the open one, download, preview text. */

const message = errorText;
const join = (dir: string, name: string) => (dir ? `${dir}/${name}` : name);
const PREVIEW_LIMIT = 256 * 1024;

function size(n = 0): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** Bytes fetched with the key, handed to the browser as a download (a plain link cannot carry the key). */
async function download(id: string, path: string) {
  const res = await rest.file(id, path);
  const url = URL.createObjectURL(await res.blob());
  const a = document.createElement('a');
  a.href = url;
  a.download = path.split('/').pop() ?? 'file';
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

/** `readOnly`: browse, preview and download only (a viewer, or a teammate reading it). */
export function FilesPane({ id, readOnly = false }: { id: string; readOnly?: boolean }) {
  const [dir, setDir] = useState('');
  const [entries, setEntries] = useState<Entry[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const [preview, setPreview] = useState<{ path: string; text: string } | null>(null);
  const [tick, setTick] = useState(0);

  // tick reloads the listing
  useEffect(() => {
    setError(null);
    rest.ls(id, dir).then(
      (l) => setEntries([...l].sort((a, b) => (a.type === b.type ? a.name.localeCompare(b.name) : a.type === 'directory' ? -1 : 1))),
      (e) => {
        setEntries([]);
        // A session that never ran has no folder yet: that is an empty workspace, not an error.
        if (!(e instanceof ApiError && e.status === 404 && !dir)) setError(message(e));
      },
    );
  }, [id, dir, tick]);

  const upload = async (e: Event) => {
    const input = e.currentTarget as HTMLInputElement;
    const files = [...(input.files ?? [])];
    if (!files.length) return;
    setError(null);
    try {
      const r = await rest.upload(id, dir, files);
      setNote(`Uploaded ${r.uploaded.join(', ')}${r.failed.length ? `; ${r.failed.length} failed` : ''}`);
      setTick((t) => t + 1);
    } catch (err) {
      setError(message(err));
    }
    input.value = '';
  };
  const show = async (path: string, n?: number) => {
    if ((n ?? 0) > PREVIEW_LIMIT) return setError(`${path} is too large to preview (${size(n)}): download it`);
    try {
      const res = await rest.file(id, path);
      setPreview({ path, text: await res.text() });
    } catch (err) {
      setError(message(err));
    }
  };
  const crumbs = dir ? dir.split('/') : [];
  return (
    <section class="files" aria-label="Files">
      <div class="toolbar">
        <nav aria-label="Folder" class="crumbs">
          <button type="button" class="link" onClick={() => setDir('')}>
            workspace
          </button>
          {crumbs.map((c, i) => (
            <span key={i}>
              {' / '}
              <button type="button" class="link" onClick={() => setDir(crumbs.slice(0, i + 1).join('/'))}>
                {c}
              </button>
            </span>
          ))}
        </nav>
        {!readOnly && (
          <label class="button">
            Upload files
            <input type="file" multiple class="sr-only" onChange={upload} />
          </label>
        )}
      </div>
      <Notice note={note} error={error} />
      {entries && entries.length === 0 && !error && <p class="muted">This folder is empty.</p>}
      <ul class="entries">
        {(entries ?? []).map((e) => (
          <li key={e.name}>
            {e.type === 'directory' ? (
              <button type="button" class="link" onClick={() => setDir(join(dir, e.name))}>
                {e.name}/
              </button>
            ) : (
              <>
                <span class="fname">{e.name}</span>
                <span class="muted">{size(e.size)}</span>
                <button type="button" onClick={() => show(join(dir, e.name), e.size)} aria-label={`Preview ${e.name}`}>
                  Preview
                </button>
                <button type="button" onClick={() => download(id, join(dir, e.name)).catch((err) => setError(message(err)))} aria-label={`Download ${e.name}`}>
                  Download
                </button>
              </>
            )}
          </li>
        ))}
      </ul>
      {preview && (
        <figure class="preview">
          <figcaption>
            {preview.path}{' '}
            <button type="button" onClick={() => setPreview(null)}>
              Close
            </button>
          </figcaption>
          <pre>{preview.text}</pre>
        </figure>
      )}
    </section>
  );
}
