import { useEffect, useState } from 'preact/hooks';
import { rest } from './api.js';

/**
 * User names by id, for the admin tables (audit, usage by user) whose records carry ids. Read
 * once when `enabled` (an admin page); an id the list does not hold is shown as it is. `ready`
 * stays false until the list has answered (or failed), so a table shows names from its first
 * paint instead of ids that turn into names a moment later.
 */
export function useUserNames(enabled = true): { names: Map<string, string>; nameOf: (id: string) => string; ready: boolean } {
  const [names, setNames] = useState<Map<string, string>>(new Map());
  const [settled, setSettled] = useState(false);
  useEffect(() => {
    if (!enabled) return;
    rest.users().then(
      (r) => {
        setNames(new Map(r.items.map((u) => [u.id, u.username])));
        setSettled(true);
      },
      () => setSettled(true),
    );
  }, [enabled]);
  return { names, nameOf: (id: string) => names.get(id) ?? id, ready: !enabled || settled };
}
