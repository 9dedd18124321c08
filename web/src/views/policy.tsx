import { useEffect, useState } from 'preact/hooks';
import { errorText } from '../errors.js';
import { contract, type Optional, type PolicyRule } from '../contract-api.js';
import { Notice } from './notice.js';
import { Unavailable } from './unavailable.js';

/**
 * A session's tool policy (docs/policy.md): the effective rules with where each comes from,
 * and the session's own rules, which its owner adds and removes here. The service decides what
 * they may do (a session's rule narrows, never widens); a rule it refuses comes back as its 422.
 */

const message = errorText;
const rulesOf = (b: { rules: PolicyRule[] } | PolicyRule[]) => (Array.isArray(b) ? b : b.rules);
const own = (r: PolicyRule) => r.source === 'session';
const bare = ({ tool, pattern, action }: PolicyRule): PolicyRule => ({ tool, action, ...(pattern ? { pattern } : {}) });

export function PolicyPane({ id }: { id: string }) {
  const [policy, setPolicy] = useState<Optional<{ rules: PolicyRule[] } | PolicyRule[]> | null>(null);
  const [tool, setTool] = useState('');
  const [pattern, setPattern] = useState('');
  const [action, setAction] = useState<PolicyRule['action']>('ask');
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    contract.policy(id).then(setPolicy, (e) => setError(message(e)));
  }, [id, tick]);
  if (!policy) return <Notice error={error} />;
  if (!policy.available)
    return (
      <section class="page policy" aria-label="Tool policy">
        <Unavailable what="Tool policy" route={`GET /api/sessions/${id}/policy`} />
      </section>
    );
  const rules = rulesOf(policy.body);
  const save = async (next: PolicyRule[]) => {
    setError(null);
    try {
      await contract.setPolicy(id, next.map(bare));
      setTick((t) => t + 1);
      return true;
    } catch (e) {
      setError(message(e));
      return false;
    }
  };
  const add = async (e: Event) => {
    e.preventDefault();
    if (await save([...rules.filter(own), { tool: tool.trim(), pattern: pattern.trim() || null, action }])) {
      setTool('');
      setPattern('');
    }
  };
  return (
    <section class="page policy" aria-label="Tool policy">
      <p class="muted">Before a tool runs, a matching deny wins, then ask, then allow. Rules you add here apply to this session only and can only make it stricter.</p>
      <Notice error={error} />
      {rules.length === 0 ? (
        <p class="muted">No rules: every tool runs as the install's default says.</p>
      ) : (
        <ul class="rules">
          {rules.map((r, i) => (
            <li key={i}>
              <span class={`act act-${r.action}`}>{r.action}</span> <code>{r.tool}</code> {r.pattern && <code class="muted">{r.pattern}</code>} <span class="muted">from {r.source ?? 'unknown'}</span>
              {own(r) && (
                <button type="button" class="danger" aria-label={`Remove rule ${r.action} ${r.tool} ${r.pattern ?? ''}`} onClick={() => save(rules.filter((x) => own(x) && x !== r))}>
                  Remove
                </button>
              )}
            </li>
          ))}
        </ul>
      )}
      <form class="row" onSubmit={add} aria-label="Add a rule to this session">
        <select aria-label="Action" value={action} onChange={(e) => setAction(e.currentTarget.value as PolicyRule['action'])}>
          <option value="ask">ask</option>
          <option value="deny">deny</option>
          <option value="allow">allow</option>
        </select>
        <input aria-label="Tool, provider or glob" placeholder="Tool (Bash, mcp__github__*)" value={tool} onInput={(e) => setTool(e.currentTarget.value)} />
        <input aria-label="Pattern (optional)" placeholder="Pattern (git push*)" value={pattern} onInput={(e) => setPattern(e.currentTarget.value)} />
        <button type="submit" class="primary" disabled={!tool.trim()}>
          Add rule
        </button>
      </form>
    </section>
  );
}
