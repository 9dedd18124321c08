/** A failure as the service worded it (role=alert), or a confirmation (role=status); nothing when empty. */
export function Notice({ error, note }: { error?: string | null; note?: string | null }) {
  return (
    <>
      {note && (
        <p class="note" role="status">
          {note}
        </p>
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </>
  );
}
