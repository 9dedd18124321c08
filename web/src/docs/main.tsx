import { render } from 'preact';
import { useEffect, useMemo, useState } from 'preact/hooks';
import '../styles.css';
import './docs.css';
import { AREA_ORDER, areaId, areaOf } from './areas.js';
import { type Components, example, type Schema } from './example.js';

/**
 * The API reference at /api/docs: the document the service ships (GET /api/openapi.json) as one
 * page, grouped by the interface's areas, each operation with its parameters and an example request and
 * response made from its own schemas. Served by the service with everything bundled (no CDN), under
 * the console's CSP; it needs no key (docs/trust-boundary.md).
 */

interface Operation {
  operationId: string;
  summary?: string;
  description?: string;
  parameters?: { name: string; in: string; required?: boolean; description?: string; schema?: Schema }[];
  requestBody?: { required?: boolean; content?: Record<string, { schema?: Schema }> };
  responses?: Record<string, { description?: string; content?: Record<string, { schema?: Schema }> }>;
  security?: unknown[];
}
interface Doc {
  info: { title: string; version: string; description?: string };
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Components };
}
interface Entry {
  method: string;
  path: string;
  op: Operation;
}

const METHODS = ['get', 'post', 'put', 'patch', 'delete'];
const json = (v: unknown) => JSON.stringify(v, null, 2);

function requestText(e: Entry, schemas: Components): string {
  const params = e.op.parameters ?? [];
  let path = e.path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const p = params.find((x) => x.in === 'path' && x.name === name);
    return encodeURIComponent(String(example(p?.schema ?? { type: 'string' }, schemas, name)));
  });
  const query = params.filter((p) => p.in === 'query' && p.required).map((p) => `${p.name}=${encodeURIComponent(String(example(p.schema, schemas, p.name)))}`);
  if (query.length) path += `?${query.join('&')}`;
  const lines = [`${e.method.toUpperCase()} ${path}`];
  if (e.op.security?.length !== 0) lines.push('Authorization: Bearer sk-agentsvc-v2-…');
  const content = e.op.requestBody?.content ?? {};
  const type = Object.keys(content)[0];
  if (type) {
    lines.push(`Content-Type: ${type}`, '');
    const body = example(content[type].schema, schemas);
    if (type === 'application/json') lines.push(json(body));
    else if (body && typeof body === 'object') lines.push(...Object.entries(body).map(([k, v]) => `${k}: ${typeof v === 'string' ? v : json(v)}`));
    else lines.push(String(body ?? '<bytes>'));
  }
  return lines.join('\n');
}

function responseText(e: Entry, schemas: Components): string {
  const responses = e.op.responses ?? {};
  const status = Object.keys(responses).find((s) => /^2/.test(s)) ?? Object.keys(responses)[0];
  if (!status) return '';
  const r = responses[status];
  const type = Object.keys(r.content ?? {})[0];
  const head = `HTTP ${status === '2XX' ? '200' : status}${r.description ? `  (${r.description})` : ''}`;
  if (!type) return head;
  const body = example(r.content?.[type]?.schema, schemas);
  return [head, `Content-Type: ${type}`, '', type.includes('json') ? json(body) : String(body ?? '<bytes>')].join('\n');
}

function OperationView({ e, schemas }: { e: Entry; schemas: Components }) {
  const open = typeof location !== 'undefined' && location.hash === `#${e.op.operationId}`;
  const isPublic = e.op.security?.length === 0;
  const params = e.op.parameters ?? [];
  return (
    <details class="op" id={e.op.operationId} open={open}>
      <summary>
        <span class={`method m-${e.method}`}>{e.method.toUpperCase()}</span> <code class="path">{e.path}</code> <span class="osum">{e.op.summary}</span>
        {isPublic && <span class="badge public">public: no key</span>}
      </summary>
      <div class="obody">
        {e.op.description && <p>{e.op.description}</p>}
        {params.length > 0 && (
          <table class="grid params">
            <caption>Parameters</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">In</th>
                <th scope="col">Type</th>
                <th scope="col">Description</th>
              </tr>
            </thead>
            <tbody>
              {params.map((p) => (
                <tr key={`${p.in}:${p.name}`}>
                  <th scope="row">
                    <code>{p.name}</code>
                    {p.required ? <span class="req"> required</span> : ''}
                  </th>
                  <td>{p.in}</td>
                  <td>{p.schema?.type ?? ''}</td>
                  <td>{p.description ?? p.schema?.description ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <div class="examples">
          <div>
            <h4>Example request</h4>
            <pre>{requestText(e, schemas)}</pre>
          </div>
          <div>
            <h4>Example response</h4>
            <pre>{responseText(e, schemas)}</pre>
          </div>
        </div>
        <p class="muted">
          Errors: an <a href="#errors">error body</a> with status 4XX or 5XX.
        </p>
      </div>
    </details>
  );
}

function Docs() {
  const [doc, setDoc] = useState<Doc | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [q, setQ] = useState('');
  useEffect(() => {
    fetch('/api/openapi.json')
      .then((r) => (r.ok ? r.json() : Promise.reject(new Error(`GET /api/openapi.json answered ${r.status}`))))
      .then(setDoc, (e) => setError(String(e.message ?? e)));
  }, []);
  const groups = useMemo(() => {
    const by = new Map<string, Entry[]>(AREA_ORDER.map((a) => [a, []]));
    for (const [path, item] of Object.entries(doc?.paths ?? {}))
      for (const method of METHODS) if (item[method]) by.get(areaOf(path))!.push({ method, path, op: item[method] });
    return [...by].filter(([, list]) => list.length);
  }, [doc]);
  if (error) return <p class="error" role="alert">{error}</p>;
  if (!doc) return <p class="loading">Loading the API document…</p>;
  const schemas = doc.components?.schemas ?? {};
  const needle = q.trim().toLowerCase();
  const shown = (e: Entry) => !needle || `${e.method} ${e.path} ${e.op.summary ?? ''} ${e.op.description ?? ''}`.toLowerCase().includes(needle);
  const total = groups.reduce((n, [, l]) => n + l.length, 0);
  return (
    <div class="docs">
      <header class="top">
        <a class="brand" href="/">
          agentsvc
        </a>
        <span class="muted">
          {doc.info.title} API {doc.info.version} · {total} operations
        </span>
        <a href="/api/openapi.json">OpenAPI JSON</a>
      </header>
      <nav class="toc" aria-label="Areas">
        <label for="filter" class="sr-only">
          Filter operations
        </label>
        <input id="filter" type="search" placeholder="Filter: path, method, words" value={q} onInput={(e) => setQ(e.currentTarget.value)} />
        <ul>
          {groups.map(([area, list]) => (
            <li key={area}>
              <a href={`#${areaId(area)}`}>{area}</a> <span class="muted">{list.filter(shown).length}</span>
            </li>
          ))}
          <li>
            <a href="#errors">Errors</a>
          </li>
        </ul>
      </nav>
      <main class="ref">
        <h1>REST API reference</h1>
        <p>
          {doc.info.description} Send <code>Authorization: Bearer &lt;key&gt;</code> on every request except those marked <span class="badge public">public: no key</span>. The
          real-time half (Socket.IO events, acks, <code>seq</code> and replay) is in <code>docs/socket-protocol.md</code> of the source.
        </p>
        {groups.map(([area, list]) => {
          const visible = list.filter(shown);
          if (!visible.length) return null;
          return (
            <section key={area} id={areaId(area)} aria-labelledby={`${areaId(area)}-h`}>
              <h2 id={`${areaId(area)}-h`}>{area}</h2>
              {visible.map((e) => (
                <OperationView key={`${e.method} ${e.path}`} e={e} schemas={schemas} />
              ))}
            </section>
          );
        })}
        <section id="errors" aria-labelledby="errors-h">
          <h2 id="errors-h">Errors</h2>
          <p>{schemas.Error?.description}</p>
          <pre>{json({ detail: 'session not found', code: 'NOT_FOUND' })}</pre>
          <pre>{json({ detail: [{ loc: ['body', 'name'], msg: 'String must contain at least 1 character(s)', type: 'too_small' }], code: 'VALIDATION_ERROR' })}</pre>
        </section>
      </main>
    </div>
  );
}

render(<Docs />, document.getElementById('app')!);
