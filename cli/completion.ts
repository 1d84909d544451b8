// `svc completion bash|zsh`: a script that completes svc's groups, subcommands and options in a
// shell. The script asks svc itself on every tab (the hidden `svc __complete WORDS...`, cli/svc.ts),
// and candidates() answers from the groups' own usage text, so completion follows the commands as
// they change, and never calls the API.
import { GroupUsageError, parseGroupArgs, printUsage, type CommandGroup } from './command.js';

/**
 * What cli/svc.ts runs outside the groups, in the shape of a group's usage so that it is read the
 * same way (and without the options every group takes).
 */
const builtins: readonly Pick<CommandGroup, 'name' | 'usage'>[] = [
  {
    name: 'token',
    usage: `  svc token inspect [--json] TOKEN
  svc token attenuate --token TOKEN [--apps a,b] [--actions read,deploy] [--expires-in 1h]`,
  },
  { name: 'admin', usage: '  svc admin create-account --email EMAIL [--name NAME]' },
];

/** The options every group takes (cli/command.ts parseGroupArgs). */
const commonOptions = new Map([
  ['--help', false],
  ['--token', true],
]);

/** One form of a group's usage: the positional words it takes in order (choices when literal), and its options. */
interface Form {
  /** Each positional's literal choices (`ls`, `bash|zsh`), or null for a placeholder (APP, [DIR]). */
  slots: (string[] | null)[];
  options: string[];
}

/** A group as completion sees it: its forms, and each option with whether it takes a value. */
export interface GroupSpec {
  name: string;
  forms: Form[];
  /** Options of the group's option lines (`  --image REF   ...`): they go with every form. */
  groupOptions: string[];
  takesValue: Map<string, boolean>;
}

const optionWord = /^(--?[a-zA-Z][\w-]*)/;
const literal = /^[a-z][a-z0-9-]*(\|[a-z][a-z0-9-]*)*$/;

/**
 * A group's forms and options, read from its usage: the lines `  svc NAME ...` (up to two spaces
 * before their description) are its forms, indented lines that start with an option describe one;
 * the example and prose are left out.
 */
export function parseUsage(group: Pick<CommandGroup, 'name' | 'usage'>, common = commonOptions): GroupSpec {
  const spec: GroupSpec = { name: group.name, forms: [], groupOptions: [], takesValue: new Map(common) };
  const prefix = `svc ${group.name}`;
  const noteValue = (option: string, value: boolean) => spec.takesValue.set(option, (spec.takesValue.get(option) ?? false) || value);
  for (const line of group.usage.split('\n')) {
    if (/^example:/.test(line)) break;
    const text = line.trim();
    if (!/^\s/.test(line)) continue;
    if (text === prefix || text.startsWith(`${prefix} `)) {
      const form = text
        .slice(prefix.length)
        .split(/ {2,}/)[0]!
        .replace(/'[^']*'|"[^"]*"/g, 'X');
      spec.forms.push(parseForm(form.trim().split(/\s+/).filter(Boolean), noteValue));
      continue;
    }
    // `  --image REF   what it does`: a value when one word follows after a single space.
    const described = /^(--?[a-zA-Z][\w-]*)( \S)?/.exec(text);
    if (described) {
      spec.groupOptions.push(described[1]!);
      noteValue(described[1]!, described[2] !== undefined);
    }
  }
  return spec;
}

function parseForm(tokens: string[], noteValue: (option: string, value: boolean) => void): Form {
  const form: Form = { slots: [], options: [] };
  let positionalsEnd = false;
  for (let i = 0; i < tokens.length; i++) {
    const raw = tokens[i]!;
    const bare = raw.replace(/^[[(]+/, '');
    const option = optionWord.exec(bare)?.[1];
    if (option) {
      const next = tokens[i + 1];
      const value = !/[\])|]$/.test(raw) && next !== undefined && !/^[-[(|]/.test(next);
      form.options.push(option);
      noteValue(option, value);
      if (value) i++;
      continue;
    }
    // After a choice of forms `(...)`, `--`, or a repeated word, the positions are no longer counted.
    if (raw === '|' || positionalsEnd) continue;
    if (raw.startsWith('(') || raw === '--' || raw.includes('...')) {
      positionalsEnd = true;
      continue;
    }
    const word = bare.replace(/[\])]+$/, '');
    form.slots.push(literal.test(word) ? word.split('|') : null);
  }
  return form;
}

const unique = (words: string[]) => [...new Set(words)];

/**
 * The words that may come next on `svc WORDS...`, one per candidate: `words` are those after `svc`,
 * the last one the word being completed (empty for a new one). Group names first, then a group's
 * subcommands (or literal arguments: `svc metrics APP requests`), its options for a word that
 * starts with "-"; nothing where a value goes (the shell then completes file names).
 */
export function candidates(words: readonly string[], groups: readonly Pick<CommandGroup, 'name' | 'usage'>[]): string[] {
  // bash splits `--image=nginx` at "=": put it together again.
  const joined: string[] = [];
  for (let i = 0; i < words.length; i++) {
    if (words[i] === '=' && joined.length > 0) joined[joined.length - 1] += '=' + (i + 1 < words.length ? words[++i] : '');
    else joined.push(words[i]!);
  }
  if (joined.length === 0) joined.push('');
  const current = joined[joined.length - 1]!;
  const before = joined.slice(0, -1);
  const starting = (list: string[]) => unique(list).filter((w) => w.startsWith(current));
  if (before.length === 0) {
    if (current.startsWith('-')) return starting(['--help']);
    return starting([...groups.map((g) => g.name), ...builtins.map((b) => b.name)]);
  }
  const known = groups.find((g) => g.name === before[0]);
  const builtin = builtins.find((b) => b.name === before[0]);
  if (!known && !builtin) return [];
  const spec = known ? parseUsage(known) : parseUsage(builtin!, new Map());

  const positionals: string[] = [];
  for (let i = 1; i < before.length; i++) {
    const word = before[i]!;
    if (word === '--') return [];
    if (word.startsWith('-') && word.length > 1) {
      if (spec.takesValue.get(word) === true) {
        if (i === before.length - 1) return []; // the current word is this option's value
        i++;
      }
      continue;
    }
    positionals.push(word);
  }
  const forms = spec.forms.filter((f) => positionals.length === 0 || !f.slots[0] || f.slots[0].includes(positionals[0]!));
  if (current.startsWith('-')) {
    if (current.includes('=')) return [];
    return starting([...forms.flatMap((f) => f.options), ...spec.groupOptions, ...(known ? commonOptions.keys() : [])]);
  }
  return starting(forms.flatMap((f) => f.slots[positionals.length] ?? []));
}

/** bash: completes svc with what `svc __complete` answers, else file names (for DIR, FILE, ...). */
export const bashScript = `# bash completion for svc: source <(svc completion bash)
_svc_completion() {
  local IFS=$'\\n'
  COMPREPLY=($(svc __complete "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null))
}
complete -o default -F _svc_completion svc`;

/**
 * zsh: as a file named _svc in $fpath (autoloaded by compinit), or sourced after compinit; words
 * the callback does not answer for complete as file names.
 */
export const zshScript = `#compdef svc
# zsh completion for svc: source <(svc completion zsh), after compinit; or svc completion zsh > "\${fpath[1]}/_svc"
_svc() {
  local -a found
  found=("\${(@f)$(svc __complete "\${(@)words[2,CURRENT]}" 2>/dev/null)}")
  found=(\${found:#})
  if (( \${#found} )); then
    compadd -- "\${found[@]}"
  else
    _files
  fi
}
if [ "\${funcstack[1]}" = _svc ]; then
  _svc "$@"
else
  compdef _svc svc
fi`;

const usage = `usage:
  svc completion bash|zsh                      print a script that completes svc's commands and
                                               options in that shell (it asks svc, not the API)
Load it in every new shell, in ~/.bashrc:
  source <(svc completion bash)
or in ~/.zshrc, after compinit:
  source <(svc completion zsh)
(or once: svc completion zsh > "\${fpath[1]}/_svc"). A word that is not a command or an option
completes as a file name.
example:
  svc completion bash > ~/.svc-completion.bash && echo 'source ~/.svc-completion.bash' >> ~/.bashrc`;

export const completionGroup: CommandGroup = {
  name: 'completion',
  synopsis: `  svc completion bash|zsh                     a script that completes svc's commands in a shell`,
  usage,
  async run(args, ctx) {
    const { values, positionals } = parseGroupArgs(this, args, {});
    if (values.help) return printUsage(this, ctx);
    const [shell, ...extra] = positionals;
    if (extra.length > 0) throw new GroupUsageError(`unexpected ${extra.join(' ')}`, usage);
    if (shell === 'bash') ctx.out(bashScript);
    else if (shell === 'zsh') ctx.out(zshScript);
    else throw new GroupUsageError(shell === undefined ? '' : `unknown shell: ${shell} (bash or zsh)`, usage);
    return 0;
  },
};
