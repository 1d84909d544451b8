// The .env files `svc env import` reads (cli/dotenv.ts): comments, quotes, escapes, `export `,
// values over several lines, and every bad line reported with its number.
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseAssignments, parseDotenv } from '../../cli/dotenv.js';

describe('parseDotenv', () => {
  it('reads names and values, skipping blank lines and comments', () => {
    const r = parseDotenv('# a comment\n\nA=1\n  B = two  \nexport C=3\n\t# indented comment\nEMPTY=\nURL=postgres://u:p@h/db?x=1#frag\n');
    assert.deepEqual(r, {
      env: { A: '1', B: 'two', C: '3', EMPTY: '', URL: 'postgres://u:p@h/db?x=1#frag' },
      errors: [],
      repeated: [],
    });
  });

  it('ends an unquoted value at a " #" comment, but keeps a # inside a word', () => {
    assert.deepEqual(parseDotenv('A=value # why\nB=a#b\nC=#notacomment\n').env, { A: 'value', B: 'a#b', C: '' });
  });

  it('takes single quotes as written and double quotes with escapes', () => {
    const r = parseDotenv(`S='it is $HOME \\n # not a comment'\nD="line1\\nline2 \\"q\\" \\\\ \\$x"\nT="tab\\there" # trailing comment\n`);
    assert.deepEqual(r.errors, []);
    assert.equal(r.env.S, 'it is $HOME \\n # not a comment');
    assert.equal(r.env.D, 'line1\nline2 "q" \\ $x');
    assert.equal(r.env.T, 'tab\there');
  });

  it('reads a quoted value over several lines, keeping its spaces', () => {
    const r = parseDotenv('KEY="-----BEGIN KEY-----\nabc  \n-----END KEY-----"\nNEXT=1\nM=\'a\nb\'\n');
    assert.deepEqual(r.env, { KEY: '-----BEGIN KEY-----\nabc  \n-----END KEY-----', NEXT: '1', M: 'a\nb' });
  });

  it('reads CRLF files and a byte-order mark', () => {
    assert.deepEqual(parseDotenv('\uFEFFA=1\r\nB="x"\r\n').env, { A: '1', B: 'x' });
  });

  it('lets the last of a repeated name win, and says which were repeated', () => {
    const r = parseDotenv('A=1\nA=2\nB=1\n');
    assert.deepEqual(r.env, { A: '2', B: '1' });
    assert.deepEqual(r.repeated, ['A']);
  });

  it('reports every bad line with its number', () => {
    const r = parseDotenv(
      [
        'GOOD=1',
        '1ABC=x',
        'NO_EQUALS',
        'MY KEY=1',
        'has-dash=1',
        '=nothing',
        `${'L'.repeat(257)}=1`,
        'Q="closed" junk',
        'OPEN="never closed',
        'AFTER=1',
      ].join('\n'),
    );
    assert.deepEqual(r.errors, [
      'line 2: "1ABC" is not a variable name (letters, digits and _, not starting with a digit, at most 256)',
      'line 3: expected KEY=VALUE',
      'line 4: "MY KEY" is not a variable name (letters, digits and _, not starting with a digit, at most 256)',
      'line 5: "has-dash" is not a variable name (letters, digits and _, not starting with a digit, at most 256)',
      'line 6: no name before =',
      `line 7: "${'L'.repeat(257)}" is not a variable name (letters, digits and _, not starting with a digit, at most 256)`,
      'line 8: unexpected text after the closing quote: junk',
      'line 9: the double quote is never closed',
    ]);
  });

  it('counts lines inside a multi-line value when numbering a later bad line', () => {
    assert.deepEqual(parseDotenv('A="x\ny\nz"\n2BAD=1\n').errors, [
      'line 4: "2BAD" is not a variable name (letters, digits and _, not starting with a digit, at most 256)',
    ]);
  });
});

describe('parseAssignments', () => {
  it('splits at the first =, keeping the rest of the value as the shell gave it', () => {
    assert.deepEqual(parseAssignments(['A=1', 'B=x=y', 'C=', 'D= spaced ']), {
      env: { A: '1', B: 'x=y', C: '', D: ' spaced ' },
      errors: [],
      repeated: [],
    });
  });

  it('refuses an argument without = or with a bad name', () => {
    assert.deepEqual(parseAssignments(['A', '9=1']).errors, [
      'A: expected KEY=VALUE',
      '"9" is not a variable name (letters, digits and _, not starting with a digit, at most 256)',
    ]);
  });
});
