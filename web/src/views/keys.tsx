import { useEffect, useState } from 'preact/hooks';
import { type ApiKey, ApiError, rest } from '../api.js';
import { Notice } from './notice.js';

/**
 * The signed-in admin's API keys (docs/trust-boundary.md "Users and keys"; an admin page, docs/console.md): list
 * (masked), create (the key is shown once, in this component's state only: the service keeps only
 * its hash, and leaving the page or "Done" forgets it), delete (its sockets are disconnected).
 */

const message = (e: unknown) => (e instanceof ApiError ? e.message : String(e));

export function KeysView() {
  const [keys, setKeys] = useState<ApiKey[] | null>(null);
  const [name, setName] = useState('');
  const [made, setMade] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  // tick reloads the list
  useEffect(() => {
    rest.keys().then(setKeys, (e) => setError(message(e)));
  }, [tick]);
  const create = async (e: Event) => {
    e.preventDefault();
    setError(null);
    try {
      const r = await rest.createKey(name.trim());
      setMade(r.plaintext);
      setName('');
      setTick((t) => t + 1);
    } catch (err) {
      setError(message(err));
    }
  };
  const remove = async (k: ApiKey) => {
    if (!confirm(`Delete the key “${k.name}”? Clients using it are disconnected at once.`)) return;
    try {
      await rest.deleteKey(k.id);
      setTick((t) => t + 1);
    } catch (err) {
      setError(message(err));
    }
  };
  return (
    <section class="page keys" aria-labelledby="keys-title">
      <h1 id="keys-title">API keys</h1>
      <form class="row" onSubmit={create}>
        <label for="key-name" class="sr-only">
          Name of the new key
        </label>
        <input id="key-name" placeholder="Name of the new key" maxLength={50} value={name} onInput={(e) => setName(e.currentTarget.value)} />
        <button type="submit" class="primary" disabled={!name.trim()}>
          Create key
        </button>
      </form>
      {made && (
        <div class="made" role="status">
          <p>Copy this key now: it is not shown again.</p>
          <div class="row">
            <input class="share-url" aria-label="New key" readOnly value={made} onFocus={(e) => e.currentTarget.select()} />
            <button type="button" onClick={() => navigator.clipboard.writeText(made).catch(() => setError('Copy was refused by the browser: select the key and copy it.'))}>
              Copy
            </button>
            <button type="button" onClick={() => setMade(null)}>
              Done
            </button>
          </div>
        </div>
      )}
      <Notice error={error} />
      <ul class="entries">
        {(keys ?? []).map((k) => (
          <li key={k.id}>
            <span class="fname">
              {k.name} <code class="masked">{k.masked}</code>
            </span>
            <span class="muted">{k.last_used_at ? `used ${new Date(k.last_used_at).toLocaleString()}` : 'never used'}</span>
            <button type="button" class="danger" onClick={() => remove(k)} aria-label={`Delete key ${k.name}`}>
              Delete
            </button>
          </li>
        ))}
      </ul>
    </section>
  );
}
