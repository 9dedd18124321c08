import { useEffect, useState } from 'preact/hooks';
import { errorText } from '../errors.js';
import { useUserNames } from '../user-names.js';
import { type Budget, contract, type Optional, type Usage } from '../contract-api.js';
import { Notice } from './notice.js';
import { ScrollRegion } from './scroll-region.js';
import { Unavailable } from './unavailable.js';

/**
 * Usage and budgets (docs/models-and-usage.md): the caller's model calls grouped by day, model or
 * session (an admin may group by user), and each budget that applies with how much of it is used
 * and when it resets.
 */

const message = errorText;
const num = (n: number | null | undefined) => (n == null ? '–' : n.toLocaleString());
const money = (n: number | null | undefined) => (n == null ? '–' : `$${n.toFixed(n < 1 ? 4 : 2)}`);

function BudgetRow({ b }: { b: Budget }) {
  const parts: { label: string; used: number; max: number; show: (n: number) => string }[] = [];
  if (b.max_tokens != null) parts.push({ label: 'tokens', used: b.used_tokens, max: b.max_tokens, show: num });
  if (b.max_cost != null) parts.push({ label: 'cost', used: b.used_cost ?? 0, max: b.max_cost, show: money });
  return (
    <li>
      <span class="bname">
        {b.scope} · {b.period}
      </span>
      {parts.map((p) => (
        <span class="meter" key={p.label}>
          <progress max={p.max} value={Math.min(p.used, p.max)} aria-label={`${b.scope} ${b.period} budget, ${p.label} used`} />
          <span>
            {p.show(p.used)} of {p.show(p.max)} {p.label}
            {p.used >= p.max ? ' · spent' : ''}
          </span>
        </span>
      ))}
      <span class="muted">{b.resets_at ? `resets ${new Date(b.resets_at).toLocaleString()}` : 'never resets'}</span>
    </li>
  );
}

export function UsageView({ admin }: { admin: boolean }) {
  const [groupBy, setGroupBy] = useState('day');
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [usage, setUsage] = useState<Optional<Usage> | null>(null);
  const [budgets, setBudgets] = useState<Optional<{ budgets: Budget[] }> | null>(null);
  const [error, setError] = useState<string | null>(null);
  const { nameOf, ready: namesReady } = useUserNames(admin && groupBy === 'user');
  useEffect(() => {
    setError(null);
    contract.usage({ group_by: groupBy, from: from || undefined, to: to || undefined }).then(setUsage, (e) => setError(message(e)));
  }, [groupBy, from, to]);
  useEffect(() => {
    contract.budgets().then(setBudgets, (e) => setError(message(e)));
  }, []);
  const total = usage?.available ? usage.body.total : undefined;
  return (
    <section class="page usage-page" aria-labelledby="usage-title">
      <h1 id="usage-title">Usage and budgets</h1>
      <Notice error={error} />
      <h2>Budgets</h2>
      {budgets && !budgets.available && <Unavailable what="Budgets" route="GET /api/budgets" />}
      {budgets?.available && budgets.body.budgets.length === 0 && <p class="muted">No budget applies to you.</p>}
      {budgets?.available && (
        <ul class="budgets">
          {budgets.body.budgets.map((b, i) => (
            <BudgetRow key={i} b={b} />
          ))}
        </ul>
      )}
      <h2>Usage</h2>
      {usage && !usage.available && <Unavailable what="Usage" route="GET /api/usage" />}
      {usage?.available && (
        <>
          <div class="row filters">
            <label>
              Group by{' '}
              <select value={groupBy} onChange={(e) => setGroupBy(e.currentTarget.value)}>
                <option value="day">day</option>
                <option value="model">model</option>
                <option value="session">session</option>
                {admin && <option value="user">user</option>}
              </select>
            </label>
            <label>
              From <input type="date" value={from} onChange={(e) => setFrom(e.currentTarget.value)} />
            </label>
            <label>
              To <input type="date" value={to} onChange={(e) => setTo(e.currentTarget.value)} />
            </label>
          </div>
          {usage.body.items.length === 0 ? (
            <p class="muted">No model calls in this period.</p>
          ) : (
            <ScrollRegion label="Model calls">
              <table class="grid">
                <caption class="sr-only">Model calls by {groupBy}</caption>
                <thead>
                  <tr>
                    <th scope="col">{groupBy}</th>
                    <th scope="col">Calls</th>
                    <th scope="col">Input tokens</th>
                    <th scope="col">Output tokens</th>
                    <th scope="col">Cost</th>
                  </tr>
                </thead>
                <tbody>
                  {namesReady && usage.body.items.map((u) => (
                    <tr key={u.key}>
                      <th scope="row">{groupBy === 'user' ? nameOf(u.key) : u.key}</th>
                      <td>{num(u.calls)}</td>
                      <td>{num(u.input_tokens)}</td>
                      <td>{num(u.output_tokens)}</td>
                      <td>{money(u.cost)}</td>
                    </tr>
                  ))}
                </tbody>
                {typeof total === 'object' && (
                  <tfoot>
                    <tr>
                      <th scope="row">Total</th>
                      <td>{num(total.calls)}</td>
                      <td>{num(total.input_tokens)}</td>
                      <td>{num(total.output_tokens)}</td>
                      <td>{money(total.cost)}</td>
                    </tr>
                  </tfoot>
                )}
              </table>
            </ScrollRegion>
          )}
        </>
      )}
    </section>
  );
}
