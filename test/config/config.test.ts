/**
 * config.yaml's mistakes as a person reads them (issue 47): every refusal starts FILE:LINE:COL and
 * says what to change — the YAML problem in one line (no dangling "at line 4, column 1:"), an
 * unknown key with the nearest known one, a missing key where the mapping that lacks it is, a value
 * the schema refuses with its key's path — located by the code that places plugin.yaml's (M4).
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadConfig } from '../../src/config/config.js';
import { KeelError } from '../../src/util/errors.js';
import { tempHome } from '../support/helpers.js';

/** What loadConfig says about this config.yaml, and the file it wrote. */
function refused(yaml: string): { message: string; file: string } {
  const home = tempHome('keel-config-');
  const file = join(home, 'config.yaml');
  writeFileSync(file, yaml);
  try {
    loadConfig(home, {});
  } catch (err) {
    assert.ok(err instanceof KeelError && err.code === 'config', String(err));
    return { message: err.message, file };
  }
  assert.fail(`expected loadConfig to refuse:\n${yaml}`);
}

test('issue 47: an unknown key names its line and column and the nearest known key', () => {
  let r = refused('# Keel\npolcy:\n  tools: {}\n');
  assert.equal(r.message, `${r.file}:2:1: unknown key 'polcy' (did you mean 'policy'?)`);
  r = refused('subagents:\n  max_total: 2\n  max_totl: 3\n');
  assert.equal(r.message, `${r.file}:3:3: unknown key 'subagents.max_totl' (did you mean 'subagents.max_total'?)`);
  // A misspelt key also leaves the key it meant missing: the misspelling is what is reported.
  r = refused('subagents:\n  delegates:\n    - name: a\n      instructons: tidy up\n      tools: [t]\n');
  assert.equal(
    r.message,
    `${r.file}:4:7: unknown key 'subagents.delegates.0.instructons' (did you mean 'subagents.delegates.0.instructions'?)`,
  );
  // Nothing near enough: no guess.
  r = refused('telemetry: on\n');
  assert.equal(r.message, `${r.file}:1:1: unknown key 'telemetry'`);
});

test('issue 47: a YAML mistake is one clean line after FILE:LINE:COL', () => {
  let r = refused('subagents:\n  max_total: 2\n  delegates:\n- name: x\n');
  assert.equal(r.message, `${r.file}:3:13: not valid YAML: A block sequence may not be used as an implicit map key`);
  r = refused('subagents:\n  max_total: 2\nsubagents: {}\n');
  assert.equal(r.message, `${r.file}:3:1: not valid YAML: Map keys must be unique`);
  r = refused('policy_file: "policy.cedar\n');
  assert.match(r.message, new RegExp(`^${r.file}:\\d+:\\d+: not valid YAML: Missing closing "quote$`));
  assert.doesNotMatch(r.message, /at line|\n/);
});

test('issue 47: a missing key is reported where its mapping is; a refused value at the value, with its path', () => {
  let r = refused('subagents:\n  delegates:\n    - name: cleaner\n      tools: [trash_email]\n');
  assert.equal(r.message, `${r.file}:3:7: subagents.delegates.0: missing required key 'instructions'`);
  r = refused('subagents:\n  max_total: 0\n');
  assert.match(r.message, new RegExp(`^${r.file}:2:14: subagents\\.max_total: `));
  r = refused('subagents:\n  delegates:\n    - { name: a, instructions: x, tools: [t] }\n    - { name: a, instructions: y, tools: [t] }\n');
  assert.equal(r.message, `${r.file}:4:15: subagents.delegates: the name a is used twice`);
});
