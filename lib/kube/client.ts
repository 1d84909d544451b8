import * as k8s from '@kubernetes/client-node';

/** A KubeConfig from the configured file, or in-cluster credentials when none is configured. */
export function loadKubeConfig(kubeconfig: string | undefined): k8s.KubeConfig {
  const kc = new k8s.KubeConfig();
  if (kubeconfig) kc.loadFromFile(kubeconfig);
  else kc.loadFromDefault();
  return kc;
}

/** The HTTP status of a failed client call, or undefined for anything else. */
export function kubeStatus(err: unknown): number | undefined {
  return err instanceof k8s.ApiException ? err.code : undefined;
}

/** A rejection handler that swallows these apiserver statuses (a 409 of a create made already, a 404 of a delete done) and rethrows the rest. */
export const ignoreStatus =
  (...codes: number[]) =>
  (err: unknown): void => {
    if (!codes.includes(kubeStatus(err) ?? 0)) throw err;
  };

/** Request options of a server-side apply patch (a body that says what the field manager owns). */
export const serverSideApply = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.ServerSideApply);
/** Request options of a JSON merge patch. */
export const mergePatch = k8s.setHeaderOptions('Content-Type', k8s.PatchStrategy.MergePatch);

/** The apiserver's reason for refusing an object of `kind` (a 422), without its "X is invalid:" preamble. */
export function rejectionMessage(err: unknown, kind: string): string {
  const body = (err as { body?: unknown }).body;
  try {
    const parsed = (typeof body === 'string' ? JSON.parse(body) : body) as { message?: string };
    return (parsed.message ?? 'rejected').replace(new RegExp(`^${kind}\\.svc\\.dev "[^"]*" is invalid: `), '');
  } catch {
    return 'rejected';
  }
}
