/**
 * SKILL.md front matter: the YAML that skill publishers write, read as strings, lists and one
 * level of map; what is not a skill's front matter is refused with a line for its author.
 */
import t from 'tap';
import { parseFrontMatter, parseSkill, SkillFormatError } from '../../plugins/skills/format.js';

const accepted: [string, string, Record<string, unknown>][] = [
  ['plain scalars', 'name: pdf\ndescription: Fill PDF forms', { name: 'pdf', description: 'Fill PDF forms' }],
  ['a comment after a plain scalar, and comment lines', '# about\nname: pdf # the id\ndescription: x', { name: 'pdf', description: 'x' }],
  ['double and single quotes', `name: "pdf"\ndescription: 'it''s: here'`, { name: 'pdf', description: "it's: here" }],
  ['an escape in double quotes', 'description: "a\\tb"', { description: 'a\tb' }],
  ['numbers and booleans stay text', 'license: 2.0\nversion: 1\ndraft: true', { license: '2.0', version: '1', draft: 'true' }],
  ['a literal block', 'description: |\n  line one\n  line two\nname: x', { description: 'line one\nline two\n', name: 'x' }],
  ['a folded block', 'description: >\n  one\n  two\n', { description: 'one two\n' }],
  ['a stripped literal block', 'description: |-\n  one\n  two', { description: 'one\ntwo' }],
  ['a plain scalar over continuation lines', 'description: one\n  two\n  three', { description: 'one two three' }],
  ['a flow list', 'allowed-tools: [Read, "Bash(git:*)"]', { 'allowed-tools': ['Read', 'Bash(git:*)'] }],
  ['an empty flow list', 'allowed-tools: []', { 'allowed-tools': [] }],
  ['a block list', 'allowed-tools:\n  - Read\n  - Grep', { 'allowed-tools': ['Read', 'Grep'] }],
  ['a map', 'metadata:\n  author: me\n  version: "1.0"', { metadata: { author: 'me', version: '1.0' } }],
  ['an empty value', 'license:', { license: '' }],
  ['nothing at all', '', {}],
];

for (const [what, yaml, want] of accepted) {
  t.test(`accepted: ${what}`, async (t) => {
    t.same(parseFrontMatter(yaml), want);
  });
}

function refusal(yaml: string): unknown {
  try {
    parseFrontMatter(yaml);
  } catch (e) {
    return e;
  }
  return null;
}

const refused: [string, string, RegExp][] = [
  ['a key given twice', 'name: a\nname: b', /^front matter line 2: .*unique/],
  ['a line that is not key: value', 'name: a\njust text', /^front matter line 2/],
  ['a map nested two deep', 'metadata:\n  a:\n    b: c', /^front matter metadata: /],
  ['a list of lists', 'allowed-tools:\n  - [a]', /^front matter allowed-tools: /],
  ['a broken double-quoted string', 'description: "abc', /^front matter line 1/],
  ['a list at the top', '- a\n- b', /^front matter must be "key: value" lines/],
];

for (const [what, yaml, message] of refused) {
  t.test(`refused: ${what}`, async (t) => {
    const e = refusal(yaml);
    t.ok(e instanceof SkillFormatError, 'a SkillFormatError');
    t.match((e as Error).message, message);
  });
}

t.test('a tag is text or refused, never run', async (t) => {
  for (const yaml of ['description: !!js/function "function(){ return 1 }"', 'description: !custom x']) {
    const e = refusal(yaml);
    if (e) t.ok(e instanceof SkillFormatError, yaml);
    else t.type(parseFrontMatter(yaml).description, 'string', yaml);
  }
});

t.test('parseSkill reads the body and checks the fields', async (t) => {
  const doc = parseSkill('---\nname: pdf\ndescription: |\n  Fill forms.\nallowed-tools: Read Grep\nmetadata:\n  owner: ops\n---\n# Use\nsteps\n', 'pdf');
  t.same(doc, { name: 'pdf', description: 'Fill forms.', allowedTools: ['Read', 'Grep'], license: undefined, metadata: { owner: 'ops' }, body: '# Use\nsteps', notes: [] });
  t.throws(() => parseSkill('---\nname: pdf\n---\n', 'pdf'), { message: /description/ });
  t.throws(() => parseSkill('---\nname: pdf\ndescription: x\n---\n', 'other'), { message: /folder/ });
});
