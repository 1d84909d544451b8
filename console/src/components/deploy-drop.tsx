// "Deploy new files" on an app's deploys page: a folder or a .tar.gz dropped on the zone, or chosen
// with either button, becomes the app's next deploy. A folder is packed here (tarball.ts) and sent
// as it is read, with the upload's progress; the deploy then shows in the list like any other.
import { useRef, useState } from 'preact/hooks';
import type { Deploy } from '../api.js';
import { uploadDeploy } from '../upload.js';
import { bytesInWords } from '../resources.js';
import { isTarball, tarGzip, treePaths, TreeError, type TreeEntry } from '../tarball.js';
import { ErrorMessage } from './error-message.js';

interface Picked {
  path: string;
  file: File;
}

/** A dropped entry's files, each with its path from the drop (a folder's name first). */
async function walk(entry: FileSystemEntry, into: Picked[], prefix = ''): Promise<void> {
  if (entry.isFile) {
    const file = await new Promise<File>((resolve, reject) => (entry as FileSystemFileEntry).file(resolve, reject));
    into.push({ path: `${prefix}${entry.name}`, file });
    return;
  }
  if (!entry.isDirectory) return;
  const reader = (entry as FileSystemDirectoryEntry).createReader();
  // readEntries answers in batches (100 in Chromium) until an empty one.
  for (;;) {
    const batch = await new Promise<FileSystemEntry[]>((resolve, reject) => reader.readEntries(resolve, reject));
    if (!batch.length) return;
    for (const child of batch) await walk(child, into, `${prefix}${entry.name}/`);
  }
}

/** What was dropped: folders walked; plain files (or a drop without entries) as they are. */
async function dropped(transfer: DataTransfer): Promise<Picked[]> {
  // Entries are taken before any await: the drop's data is gone once its handler returns.
  const entries = [...transfer.items].map((item) => item.webkitGetAsEntry()).filter((e): e is FileSystemEntry => e !== null);
  const files = [...transfer.files];
  if (!entries.length) return files.map((file) => ({ path: file.name, file }));
  const picked: Picked[] = [];
  for (const entry of entries) await walk(entry, picked);
  return picked;
}

type Phase = { at: 'idle' } | { at: 'packing'; files: number } | { at: 'sending'; sent: number; total: number };

export function DeployDrop({ name, onDeployed }: { name: string; onDeployed: (deploy: Deploy, what: string) => void }) {
  const [phase, setPhase] = useState<Phase>({ at: 'idle' });
  const [over, setOver] = useState(false);
  const [failure, setFailure] = useState<unknown>(undefined);
  const folderInput = useRef<HTMLInputElement>(null);
  const busy = phase.at !== 'idle';

  const deploy = async (picked: Picked[]) => {
    if (busy) return;
    setFailure(undefined);
    try {
      let archive: Blob;
      let what: string;
      if (picked.length === 1 && isTarball(picked[0]!.file.name)) {
        archive = picked[0]!.file;
        what = `${picked[0]!.file.name} (${bytesInWords(archive.size)})`;
      } else {
        const { kept, left } = treePaths(picked.map((p) => p.path));
        if (!kept.length) throw new TreeError('nothing to deploy: the folder is empty (or holds only .git and the like)');
        setPhase({ at: 'packing', files: kept.length });
        const byPath = new Map(picked.map((p) => [p.path, p.file]));
        const entries: TreeEntry[] = kept.map(({ from, path }) => {
          const file = byPath.get(from)!;
          return { path, size: file.size, mtimeMs: file.lastModified, body: file };
        });
        archive = await tarGzip(entries);
        const bytes = entries.reduce((n, e) => n + e.size, 0);
        what = `${kept.length} file${kept.length === 1 ? '' : 's'} (${bytesInWords(bytes)}${left ? `; ${left} left out: .git and the like` : ''})`;
      }
      setPhase({ at: 'sending', sent: 0, total: archive.size });
      const made = await uploadDeploy(name, archive, (sent, total) => setPhase({ at: 'sending', sent, total }));
      onDeployed(made, what);
    } catch (error) {
      setFailure(error);
    } finally {
      setPhase({ at: 'idle' });
      if (folderInput.current) folderInput.current.value = '';
    }
  };

  const fromInput = (input: HTMLInputElement) => {
    const files = [...(input.files ?? [])];
    input.value = '';
    if (files.length) void deploy(files.map((file) => ({ path: file.webkitRelativePath || file.name, file })));
  };

  const percent = phase.at === 'sending' && phase.total ? Math.round((phase.sent / phase.total) * 100) : 0;
  return (
    <section aria-labelledby="deploy-new-heading" id="deploy-new">
      <h2 id="deploy-new-heading">Deploy new files</h2>
      <div
        id="deploy-drop"
        class={over ? 'dropzone over' : 'dropzone'}
        aria-describedby="deploy-drop-hint"
        onDragOver={(e) => {
          e.preventDefault();
          if (e.dataTransfer) e.dataTransfer.dropEffect = 'copy';
          setOver(true);
        }}
        onDragLeave={() => setOver(false)}
        onDrop={(e) => {
          e.preventDefault();
          setOver(false);
          if (!e.dataTransfer) return;
          dropped(e.dataTransfer).then(
            (picked) => void deploy(picked),
            (error: unknown) => setFailure(error),
          );
        }}
      >
        <p id="deploy-drop-hint">
          Drop a folder (its contents become the site, as <code>svc deploy {name} DIR</code> sends them) or a <code>.tar.gz</code> here, or
          choose one:
        </p>
        <p class="pickers">
          <label for="deploy-folder">A folder</label>{' '}
          <input
            id="deploy-folder"
            type="file"
            multiple
            disabled={busy}
            ref={(el) => {
              folderInput.current = el;
              if (el) el.webkitdirectory = true;
            }}
            onChange={(e) => fromInput(e.currentTarget)}
          />{' '}
          <label for="deploy-archive">An archive</label>{' '}
          <input
            id="deploy-archive"
            type="file"
            accept=".tar.gz,.tgz,application/gzip"
            disabled={busy}
            onChange={(e) => fromInput(e.currentTarget)}
          />
        </p>
        {phase.at === 'packing' && <p role="status">Packing {phase.files} files…</p>}
        {phase.at === 'sending' && (
          <p role="status" id="deploy-progress-text">
            <progress id="deploy-progress" max={100} value={percent} aria-label={`Uploading to ${name}`} /> Sending{' '}
            {bytesInWords(phase.sent)} of {bytesInWords(phase.total)} ({percent}%)
          </p>
        )}
      </div>
      {failure !== undefined && <ErrorMessage doing={`Deploying to ${name}`} error={failure} />}
    </section>
  );
}
