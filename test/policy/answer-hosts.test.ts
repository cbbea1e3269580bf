/**
 * O5 (src/policy/answer-hosts.ts): the hosts a model's text names, as a browser or a Markdown
 * renderer would reach them — Markdown and HTML images, protocol-relative and backslashed addresses,
 * character references, `www.` and bare `name.tld/` links — and which of them the user never wrote:
 * the host they named is theirs (and its parents), a subdomain of it is not (it can carry data).
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { hostsNamed, outsideHosts } from '../../src/policy/answer-hosts.js';
import { ownWordsOf } from '../../src/policy/own-words.js';

test('O5: every address form a renderer fetches or links is found, by the host a browser would reach', () => {
  assert.deepEqual(hostsNamed('![x](https://md.example/p.png?d=1) <img src="//rel.example/a.gif"> [a](HTTPS://Up.Example/x).'), [
    'md.example',
    'rel.example',
    'up.example',
  ]);
  assert.deepEqual(hostsNamed('see:https://colon.example/x, https:\\\\back.example\\x and https:bare-scheme.example/x'), [
    'colon.example',
    'back.example',
    'bare-scheme.example',
  ]);
  assert.deepEqual(hostsNamed('<img src="https&#58;&#47;&#47;ref.example/x"> www.w3.example and fuzzy.example/path?d=1'), [
    'ref.example',
    'www.w3.example',
    'fuzzy.example',
  ]);
  assert.deepEqual(
    hostsNamed('https://docs.example.com@user.example/ https://ｆｕｌｌ.example/ https://аррӏе.com/ http://10.0.0.1:8080/'),
    ['user.example', 'full.example', 'xn--80ak6aa92e.com', '10.0.0.1'],
  );
  assert.deepEqual(hostsNamed('<img src="https&#x3A;&sol;&sol;only-ref.example">'), ['only-ref.example'], 'references decoded');
  assert.deepEqual(hostsNamed('mailto:bob@mail.example javascript:alert(1) Note: time 12:30, e.g. v1.2/3, and/or'), [], 'nothing fetched');
});

test('O5: the host the user wrote (and its parents) is theirs; a subdomain or another host is outside', () => {
  const own = ownWordsOf(['summarise my email and open Docs.Example.com/pricing']);
  const text =
    'https://docs.example.com/pricing https://www.example.com/ https://481923.docs.example.com/x https://collect.mallory.example/?d=1 https://xdocs.example.com/';
  assert.deepEqual(outsideHosts(text, own), ['481923.docs.example.com', 'collect.mallory.example', 'xdocs.example.com']);
  assert.deepEqual(outsideHosts(text, ownWordsOf([])), hostsNamed(text), 'no words of the user: every host is outside');
});
