import { useEffect, useState } from 'preact/hooks';
import { ApiError, type ModelKey, rest } from '../api.js';
import { Notice } from './notice.js';

/**
 * Personal model keys (docs/model-keys.md): for each model the install lets people bring their own
 * key for, the caller's key masked, a field to add or replace it (the service encrypts it and never
 * shows it again: this page forgets it once sent) and a delete. A `required` model without one
 * refuses a run before it starts.
 */

const message = (e: unknown) => (e instanceof ApiError ? e.message : String(e));

function KeyRow({ item, onChanged, onError }: { item: ModelKey; onChanged: (note: string) => void; onError: (e: string) => void }) {
  const [value, setValue] = useState('');
  const [busy, setBusy] = useState(false);
  const id = `mk-${item.model_id.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  const save = async (e: Event) => {
    e.preventDefault();
    setBusy(true);
    try {
      await rest.setModelKey(item.model_id, value.trim());
      setValue('');
      onChanged(`Saved your key for ${item.model_id}.`);
    } catch (err) {
      onError(message(err));
    } finally {
      setBusy(false);
    }
  };
  const remove = async () => {
    if (!confirm(`Delete your key for ${item.model_id}?${item.personal_key === 'required' ? ' This model refuses runs without one.' : ' Runs use the install’s key again.'}`))
      return;
    try {
      await rest.deleteModelKey(item.model_id);
      onChanged(`Deleted your key for ${item.model_id}.`);
    } catch (err) {
      onError(message(err));
    }
  };
  return (
    <li class="model-key">
      <div class="model-key-head">
        <strong>{item.model_id}</strong>
        <span class={`badge ${item.personal_key === 'required' ? 'required' : ''}`}>{item.personal_key === 'required' ? 'your key required' : 'your key optional'}</span>
      </div>
      <p class="muted">
        {item.set ? (
          <>
            Your key: <code>{item.masked}</code>
            {item.updated_at && <> · saved {new Date(item.updated_at).toLocaleString()}</>}
            {item.readable === false && <> · cannot be decrypted (the service's secret changed): add it again</>}
          </>
        ) : item.personal_key === 'required' ? (
          'No key yet: runs with this model are refused until you add one.'
        ) : (
          'No key yet: runs use the key of the install.'
        )}
      </p>
      <form class="row" onSubmit={save}>
        <label for={id} class="sr-only">
          {item.set ? 'Replace' : 'Add'} your API key for {item.model_id}
        </label>
        <input
          id={id}
          type="password"
          autocomplete="off"
          spellcheck={false}
          placeholder={item.set ? 'Paste a new key to replace it' : 'Paste your API key'}
          value={value}
          onInput={(e) => setValue(e.currentTarget.value)}
        />
        <button type="submit" class="primary" disabled={busy || !value.trim()}>
          {item.set ? 'Replace' : 'Add key'}
        </button>
        {item.set && (
          <button type="button" class="danger" onClick={remove}>
            Delete
          </button>
        )}
      </form>
    </li>
  );
}

export function ModelKeysView() {
  const [items, setItems] = useState<ModelKey[] | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    rest.modelKeys().then(
      (r) => setItems(r.items),
      (e) => setError(message(e)),
    );
  }, [tick]);
  const changed = (n: string) => {
    setError(null);
    setNote(n);
    setTick((t) => t + 1);
  };
  return (
    <section class="page model-keys" aria-labelledby="model-keys-title">
      <h1 id="model-keys-title">Model credentials</h1>
      <p class="muted">Your own provider keys for the models that take one. They are stored encrypted, used only for your runs, and never shown again after you save them.</p>
      <Notice error={error} note={note} />
      {items === null && !error && <p class="loading">Loading…</p>}
      {items?.length === 0 && <p>No model of this service takes a personal key.</p>}
      {!!items?.length && (
        <ul class="model-key-list">
          {items.map((m) => (
            <KeyRow
              key={m.model_id}
              item={m}
              onChanged={changed}
              onError={(e) => {
                setNote(null);
                setError(e);
              }}
            />
          ))}
        </ul>
      )}
    </section>
  );
}
