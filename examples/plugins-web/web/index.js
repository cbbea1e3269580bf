// An example open-world read for examples/12-lookup-exfiltration.yaml: fetch_page would send its
// address to the site it names. The demo never connects: the address is logged, a canned page returned.
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';

export default function setup(api) {
  api.registerTool({
    name: 'fetch_page',
    description: 'Fetch a web page from the internet and return its text',
    parameters: {
      type: 'object',
      properties: { url: { type: 'string', description: 'The page’s address, https://…' } },
      required: ['url'],
      additionalProperties: false,
    },
    describe: ({ url }) => {
      let host = String(url);
      try {
        host = new URL(String(url)).host;
      } catch {}
      return { title: `Fetch a page from ${host}`, lines: ['The address is sent to that site.'] };
    },
    execute: ({ url }) => {
      appendFileSync(join(api.home, 'web-fetches.log'), `${url}\n`);
      return `(example page at ${url})`;
    },
  });
}
