// A destructive action asked in the page first: the question, the action's button (disabled while a
// change runs) and Keep, grouped under a name that says what is being confirmed.
import type { ComponentChildren } from 'preact';

export function ConfirmStep({
  label,
  action,
  keep = 'Keep',
  danger = true,
  busy,
  small = true,
  onConfirm,
  onKeep,
  children,
}: {
  /** The group's accessible name, "Confirm deleting …". */
  label: string;
  /** The confirming button's text. */
  action: string;
  /** The other button's text. */
  keep?: string;
  /** The confirming button is marked as destroying something (a rollback is not). */
  danger?: boolean;
  busy: boolean;
  /** Small buttons, as in a table's row. */
  small?: boolean;
  onConfirm: () => void;
  onKeep: () => void;
  /** The question. */
  children: ComponentChildren;
}) {
  return (
    <div role="group" aria-label={label} class="confirm">
      <p>{children}</p>
      <button
        type="button"
        class={[danger ? 'danger' : '', small ? 'small' : ''].filter(Boolean).join(' ')}
        disabled={busy}
        onClick={onConfirm}
      >
        {action}
      </button>{' '}
      <button type="button" class={small ? 'secondary small' : 'secondary'} onClick={onKeep}>
        {keep}
      </button>
    </div>
  );
}
