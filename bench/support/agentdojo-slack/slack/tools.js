// bench/injection-agentdojo's slack workspace and web, as the AgentDojo slack suite's tools behave
// (written here from their documented behaviour): one state object, each tool a function of it.
// Used by the plugin (index.js, state kept in KEEL_HOME/agentdojo-slack.json) and by the bench
// itself (which vectors a task's ground truth reads).

/** An error the model sees as the tool's error, as the suite's tools raise them. */
export class SlackError extends Error {}

const need = (cond, message) => {
  if (!cond) throw new SlackError(message);
};

/** The suite's URL form: without http(s)://. */
const standard = (url) => String(url).replace(/^https?:\/\//, '');

const list = (msgs) =>
  msgs.length ? msgs.map((m) => `- sender: ${m.sender}\n  recipient: ${m.recipient}\n  body: ${m.body}`).join('\n') : '[]';

export const TOOLS = {
  get_channels: (s) => s.slack.channels.map((c) => `- ${c}`).join('\n'),
  add_user_to_channel: (s, { user, channel }) => {
    need(s.slack.users.includes(user), `User ${user} not found in the users list`);
    need(s.slack.channels.includes(channel), `Channel ${channel} not found in the channels list`);
    s.slack.user_channels[user] ??= [];
    s.slack.user_channels[user].push(channel);
    return 'None';
  },
  read_channel_messages: (s, { channel }) => {
    need(s.slack.channels.includes(channel), 'Channel does not exist!');
    return list(s.slack.channel_inbox[channel] ?? []);
  },
  read_inbox: (s, { user }) => {
    need(s.slack.users.includes(user), `User ${user} not found in the users list`);
    return list(s.slack.user_inbox[user] ?? []);
  },
  send_direct_message: (s, { recipient, body }) => {
    need(s.slack.users.includes(recipient), `Recipient ${recipient} not found in the users list`);
    s.slack.user_inbox[recipient] ??= [];
    s.slack.user_inbox[recipient].push({ sender: 'bot', recipient, body });
    return 'None';
  },
  send_channel_message: (s, { channel, body }) => {
    need(s.slack.channels.includes(channel), `Channel ${channel} not found in the channels list`);
    s.slack.channel_inbox[channel] ??= [];
    s.slack.channel_inbox[channel].push({ sender: 'bot', recipient: channel, body });
    return 'None';
  },
  get_users_in_channel: (s, { channel }) => {
    need(s.slack.channels.includes(channel), `Channel ${channel} not found in the channels list`);
    return s.slack.users
      .filter((u) => (s.slack.user_channels[u] ?? []).includes(channel))
      .map((u) => `- ${u}`)
      .join('\n');
  },
  invite_user_to_slack: (s, { user, user_email }) => {
    need(!s.slack.users.includes(user), `User ${user} already in the users list`);
    s.slack.users.push(user);
    s.slack.user_inbox[user] = [];
    s.slack.user_channels[user] = [];
    s.invites = [...(s.invites ?? []), { user, user_email }];
    return 'None';
  },
  remove_user_from_slack: (s, { user }) => {
    need(s.slack.users.includes(user), `User ${user} not found in the users list`);
    s.slack.users = s.slack.users.filter((u) => u !== user);
    delete s.slack.user_inbox[user];
    delete s.slack.user_channels[user];
    return 'None';
  },
  get_webpage: (s, { url }) => {
    const u = standard(url);
    s.web.web_requests.push(u);
    return s.web.web_content[u] ?? '404 Not Found';
  },
  post_webpage: (s, { url, content }) => {
    const u = standard(url);
    s.web.web_requests.push(u);
    s.web.web_content[u] = content;
    return 'None';
  },
};

/** One call against the state (changed in place): the tool's text, or `{ error }`. */
export function callTool(state, name, args) {
  const f = TOOLS[name];
  if (!f) return { error: `No tool ${name}` };
  try {
    return String(f(state, args ?? {}));
  } catch (e) {
    if (e instanceof SlackError) return { error: e.message };
    throw e;
  }
}
