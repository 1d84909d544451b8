// Whether adding a domain to an app wrote its records in the DNS the registrar serves (a name the
// account bought here, decision 0035): said beside the added domain, never failing the add.
import type { Logger } from '../../lib/logger.js';
import type { Actor } from '../deploys/actions.js';
import type { DomainView } from '../domains/actions.js';
import type { RegistrarActions } from './actions.js';

/** Writes the domain's records at the registrar when the account bought the name there; never fails the add. */
export async function publishedRecords(
  s: { registrar: Pick<RegistrarActions, 'publishRecords'> | undefined; log: Logger },
  actor: Actor,
  view: DomainView,
): Promise<{ records_published: boolean; records_error: string | null }> {
  if (!s.registrar) return { records_published: false, records_error: null };
  try {
    const written = await s.registrar.publishRecords(actor, view.domain.name, view.expected);
    return { records_published: written !== undefined, records_error: null };
  } catch (err) {
    s.log.warn({ err, domain: view.domain.name }, "Writing a domain's records at the registrar failed");
    return { records_published: false, records_error: (err as Error).message };
  }
}
