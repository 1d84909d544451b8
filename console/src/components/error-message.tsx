// A failure in words: what was being done, and the API's own message (or why it could not be reached).
import { ConsoleError } from '../api.js';

export function errorText(err: unknown): string {
  if (err instanceof ConsoleError) return err.status ? `${err.message} (HTTP ${err.status})` : err.message;
  return err instanceof Error ? err.message : String(err);
}

export function ErrorMessage({ doing, error }: { doing: string; error: unknown }) {
  return (
    <div class="error" role="alert">
      <strong>{doing} failed:</strong> {errorText(error)}
    </div>
  );
}
