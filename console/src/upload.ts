// Deploying an archive from the console with the upload's progress (components/deploy-drop.tsx):
// XMLHttpRequest, since fetch tells nothing of an upload's progress; the same cookie and header as
// every call of api.ts.
import { ConsoleError, errorOfText, signedOut, type Deploy } from './api.js';

/**
 * Deploys an archive (a .tar.gz: a dropped folder packed by tarball.ts, or one chosen as it is) as
 * the app's next deploy, telling how much is sent as it goes: XMLHttpRequest, since fetch tells
 * nothing of an upload's progress. The same header and cookie as every other call.
 */
export function uploadDeploy(appID: string, archive: Blob, onProgress: (sent: number, total: number) => void): Promise<Deploy> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    xhr.open('POST', `/api/apps/${encodeURIComponent(appID)}/deploy`);
    xhr.withCredentials = true;
    xhr.setRequestHeader('Content-Type', 'application/gzip');
    xhr.setRequestHeader('X-Svc-Console', '1');
    xhr.upload.onprogress = (e) => onProgress(e.loaded, e.lengthComputable ? e.total : archive.size);
    xhr.onload = () => {
      if (xhr.status >= 200 && xhr.status < 300) {
        try {
          resolve(JSON.parse(xhr.responseText) as Deploy);
        } catch {
          reject(new ConsoleError(xhr.status, 'the API answered with no body'));
        }
        return;
      }
      if (xhr.status === 401) signedOut();
      reject(errorOfText(xhr.status, xhr.statusText, xhr.responseText));
    };
    xhr.onerror = () => reject(new ConsoleError(0, 'cannot reach the API: the upload was cut off'));
    xhr.send(archive);
  });
}
