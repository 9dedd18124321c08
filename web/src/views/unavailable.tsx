/** A feature the service does not serve (its route answers 404): said plainly, with the route. */
export function Unavailable({ what, route }: { what: string; route: string }) {
  return (
    <div class="unavailable" role="status">
      <p>
        <strong>{what}: not available on this server.</strong>
      </p>
      <p class="muted">
        It does not answer <code>{route}</code>. A newer agentsvc serves it; nothing is wrong with your key.
      </p>
    </div>
  );
}
