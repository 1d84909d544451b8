// An app's status in words, from what GET /apps answers: the Ready condition's reason (`status`),
// machines ready of wanted (`ready`), and how its latest change rolls out. Pure: unit-tested.

export type Tone = 'ok' | 'busy' | 'bad' | 'idle';

const words: Record<string, { text: string; tone: Tone }> = {
  MachinesReady: { text: 'Running', tone: 'ok' },
  MachinesNotReady: { text: 'Starting', tone: 'busy' },
  MachinesFailing: { text: 'Failing: its machines keep stopping', tone: 'bad' },
  NoMachines: { text: 'Stopped: no machines', tone: 'idle' },
  NotDeployed: { text: 'Not deployed yet', tone: 'idle' },
  NoSource: { text: 'Not deployed yet', tone: 'idle' },
  ImageRefused: { text: 'Image refused by the registry policy', tone: 'bad' },
  RolloutFailed: { text: 'The last deploy failed; the one before still serves', tone: 'bad' },
  Pending: { text: 'Pending', tone: 'busy' },
};

/** `MachinesNotReady` → `Machines not ready`, for a reason this list does not know yet. */
function spaced(reason: string): string {
  const s = reason.replace(/([a-z0-9])([A-Z])/g, '$1 $2').toLowerCase();
  return s.charAt(0).toUpperCase() + s.slice(1);
}

export function statusInWords(app: { status: string; ready: string }): { text: string; tone: Tone } {
  const known = words[app.status] ?? { text: spaced(app.status), tone: 'busy' as Tone };
  return { text: `${known.text} (${app.ready} machines ready)`, tone: known.tone };
}
