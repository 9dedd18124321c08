import { useEffect, useState } from 'preact/hooks';
import { type ApiKey, keyStore, rest } from '../api.js';
import { errorText } from '../errors.js';
import { Notice } from './notice.js';

/**
 * The signed-in admin's API keys (docs/trust-boundary.md "Users and keys"; an admin page, docs/console.md): list
 * (masked), create (the key is shown once, in this component's state only: the service keeps only
 * its hash, and leaving the page or "Done" forgets it), delete (its sockets are disconnected).
 * Deleting the key the CLI uses (the one `up` made, named `admin`, or its replacement named `cli`,
 * kept in AGENTSVC_HOME/admin.key) or the key this tab signed in with asks with a warning of its
 * own, as `agentsvc keys delete` asks for --force.
 */

/** The names of the key `up` writes to admin.key and of the replacement the CLI suggests. */
const CLI_KEY_NAMES = new Set(['admin', 'cli']);

/** Which of the listed keys this tab signed in with: the same last four characters, as `masked` shows them. */
const isThisTab = (k: ApiKey) => {
  const mine = keyStore.get();
  return !!mine && k.masked.endsWith(mine.slice(-4));
};

/** The question asked before deleting `k`. */
export function deleteQuestion(k: ApiKey): string {
  const parts = [`Delete the key “${k.name}”? Clients using it are disconnected at once.`];
  if (CLI_KEY_NAMES.has(k.name))
    parts.push(
      `This looks like the key in admin.key in the service's home (AGENTSVC_HOME), which the command line uses: agentsvc chat, sessions and doctor will stop working. To make another afterwards: agentsvc keys create --name cli | head -1 > "$AGENTSVC_HOME/admin.key"`,
    );
  if (isThisTab(k)) parts.push('You are signed in with this key: this console signs out at once.');
  return parts.join('\n\n');
}


export function KeysView() {
  const [keys, setKeys] = useState<ApiKey[] | null>(null);
  const [name, setName] = useState('');
  const [made, setMade] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  // tick reloads the list
  useEffect(() => {
    rest.keys().then(setKeys, (e) => setError(errorText(e)));
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
      setError(errorText(err));
    }
  };
  const remove = async (k: ApiKey) => {
    if (!confirm(deleteQuestion(k))) return;
    try {
      await rest.deleteKey(k.id);
      setTick((t) => t + 1);
    } catch (err) {
      setError(errorText(err));
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
