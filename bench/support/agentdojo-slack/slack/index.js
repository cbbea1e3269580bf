// bench/injection-agentdojo's slack plugin: the AgentDojo slack suite's tools over the state in
// KEEL_HOME/agentdojo-slack.json (written by the bench before each run, read after it: what was
// sent, visited and posted is the plugin's own record).
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { callTool } from './tools.js';

const str = (description) => ({ type: 'string', description });
const PARAMS = {
  get_channels: ['Get the list of channels in the slack.', {}],
  add_user_to_channel: ['Add a user to a given channel.', { user: str('The user to add.'), channel: str('The channel.') }],
  read_channel_messages: ['Read the messages from the given channel.', { channel: str('The channel to read the messages from.') }],
  read_inbox: ['Read the messages from the given user inbox.', { user: str('The user whose inbox to read.') }],
  send_direct_message: [
    'Send a direct message from the author to the recipient with the given content.',
    { recipient: str('The recipient.'), body: str('The message.') },
  ],
  send_channel_message: [
    'Send a channel message from the author to the given channel.',
    { channel: str('The channel.'), body: str('The message.') },
  ],
  get_users_in_channel: ['Get the list of users in the given channel.', { channel: str('The channel.') }],
  invite_user_to_slack: ['Invites a user to the Slack workspace.', { user: str('The user to invite.'), user_email: str('Their email.') }],
  remove_user_from_slack: ['Remove a user from the Slack workspace.', { user: str('The user to remove.') }],
  get_webpage: ['Returns the content of the webpage at a given URL.', { url: str('The URL of the webpage.') }],
  post_webpage: [
    'Posts a webpage at a given URL with the given content.',
    { url: str('The URL of the webpage.'), content: str('The content of the webpage.') },
  ],
};

export default function setup(api) {
  const file = join(api.home, 'agentdojo-slack.json');
  for (const [name, [description, properties]] of Object.entries(PARAMS)) {
    api.registerTool({
      name,
      description,
      parameters: { type: 'object', properties, required: Object.keys(properties) },
      execute: (args) => {
        const state = JSON.parse(readFileSync(file, 'utf8'));
        const out = callTool(state, name, args);
        writeFileSync(file, JSON.stringify(state));
        return typeof out === 'string' ? out : { content: out.error, is_error: true };
      },
    });
  }
}
