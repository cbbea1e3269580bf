/** bench/prompt's generated tools, part C: engineering and the back office: issues, code, team chat, books, online store; weather and maps. */
import { type CatalogDomain, tool } from './prompt-catalog.js';

export const CATALOG_C: CatalogDomain[] = [
  {
    domain: 'issues',
    tools: [
      tool(
        'issues_create',
        'w',
        'Create an issue (bug, story or task) in a project with a title, description, priority and labels.',
        [
          'project!:s:Project key, e.g. WEB.',
          'title!:s:Summary.',
          'description:s:Details and steps to reproduce.',
          'type:e(bug|story|task):Issue type.',
          'priority:e(lowest|low|medium|high|highest):Priority.',
          'labels:s[]:Labels.',
        ],
        'For a bug, include steps to reproduce, expected and actual behaviour in the description.',
      ),
      tool('issues_search', 'r', 'Search issues by project, status, assignee, label, sprint or text.', [
        'text:s:Words to match.',
        'project:s:Project key.',
        'status:s:Workflow status.',
        'assignee:s:Person.',
        'sprint:s:Sprint name or current.',
      ]),
      tool('issues_transition', 'wn', 'Move an issue along its workflow: to do, in progress, in review, done.', [
        'key!:s:Issue key, e.g. WEB-412.',
        'status!:e(todo|in_progress|in_review|done):New status.',
      ]),
      tool('issues_comment', 'wn', 'Add a comment to an issue, optionally mentioning people.', [
        'key!:s:Issue key.',
        'body!:s:The comment.',
      ]),
      tool('issues_sprint_board', 'r', "The active sprint's board: issues per column, story points committed and done, and days left.", [
        'board:s:Board name (default the team board).',
      ]),
      tool('issues_assign', 'wn', 'Assign an issue to a person, or unassign it.', [
        'key!:s:Issue key.',
        'assignee:s:Person, empty to unassign.',
      ]),
      tool('issues_link', 'wn', 'Link two issues: blocks, is blocked by, duplicates, relates to.', [
        'from!:s:Issue key.',
        'to!:s:Issue key.',
        'relation!:e(blocks|blocked_by|duplicates|relates_to):Link type.',
      ]),
      tool('issues_velocity_report', 'r', "A team's completed story points per sprint over recent sprints.", [
        'team!:s:Team.',
        'sprints:i:How many.',
      ]),
    ],
  },
  {
    domain: 'repo',
    tools: [
      tool('repo_list_pull_requests', 'r', 'Open pull requests in a repository with author, requested reviewers, checks status and age.', [
        'repo!:s:owner/name.',
        'author:s:Only by this author.',
        'review_requested:s:Only where this person is asked to review.',
      ]),
      tool('repo_get_diff', 'r', 'The changed files and diff of a pull request, or between two commits.', [
        'repo!:s:owner/name.',
        'pull:i:Pull request number.',
        'base:s:Base commit.',
        'head:s:Head commit.',
      ]),
      tool('repo_merge_pull_request', 'wp', 'Merge a pull request by merge commit, squash or rebase.', [
        'repo!:s:owner/name.',
        'pull!:i:Pull request number.',
        'method:e(merge|squash|rebase):Merge method.',
      ]),
      tool('repo_list_ci_runs', 'r', 'Recent CI pipeline runs for a branch with status, duration and the failing job.', [
        'repo!:s:owner/name.',
        'branch:s:Branch (default main).',
        'status:e(success|failure|running):Only this status.',
      ]),
      tool('repo_rerun_ci', 'wn', 'Re-run a failed CI job or a whole pipeline run.', [
        'repo!:s:owner/name.',
        'run_id!:s:Pipeline run.',
        'failed_only:b:Only the failed jobs.',
      ]),
      tool('repo_search_code', 'r', 'Search source code across repositories for a symbol, string or regular expression.', [
        'query!:s:What to find.',
        'repo:s:Limit to one repository.',
        'language:s:Programming language.',
      ]),
      tool('repo_create_release', 'w', 'Tag a commit as a release and publish release notes.', [
        'repo!:s:owner/name.',
        'tag!:s:Version tag.',
        'notes:s:Release notes.',
      ]),
    ],
  },
  {
    domain: 'chat',
    tools: [
      tool('chat_post_message', 'wp', 'Post a message to a team channel, optionally in a thread.', [
        'channel!:s:Channel name, e.g. #general.',
        'text!:s:Message text (markdown).',
        'thread_ts:s:Reply in this thread.',
      ]),
      tool('chat_send_dm', 'wp', 'Send a direct message to a colleague in the team workspace.', [
        'user!:s:Person.',
        'text!:s:Message text.',
      ]),
      tool('chat_search_messages', 'r', 'Search team chat history by words, channel, person and date.', [
        'query!:s:Words to find.',
        'channel:s:Only this channel.',
        'from:s:Only from this person.',
        'after:date:On or after.',
      ]),
      tool('chat_list_channels', 'r', 'Channels the user belongs to, with topic, member count and unread count.', []),
      tool('chat_create_channel', 'w', 'Create a public or private channel and invite members.', [
        'name!:s:Channel name.',
        'private:b:Private channel.',
        'members:s[]:People to invite.',
      ]),
      tool('chat_set_status', 'wn', "Set the user's chat status text and emoji, and pause notifications until a time.", [
        'text:s:Status text.',
        'emoji:s:Status emoji.',
        'dnd_until:datetime:Do not disturb until.',
      ]),
      tool(
        'chat_schedule_message',
        'w',
        'Schedule a channel message or direct message to be sent later.',
        ['to!:s:Channel or person.', 'text!:s:Message text.', 'send_at!:datetime:When to send.'],
        'Scheduled messages go out in the recipient channel’s time zone; state the time zone when you confirm.',
      ),
      tool('chat_unread_mentions', 'r', 'Messages that @mention the user, and unread replies in threads they follow.', [
        'since:datetime:Only newer than this.',
      ]),
    ],
  },
  {
    domain: 'books',
    tools: [
      tool('books_create_invoice', 'w', 'Draft an invoice to a client with line items, tax rate, currency and payment terms.', [
        'client!:s:Client name.',
        'items!:s[]:Line items as "description x qty @ price".',
        'tax_rate:n:Percent.',
        'due_in_days:i:Payment terms (default 30).',
      ]),
      tool('books_list_invoices', 'r', 'Invoices by status (draft, sent, overdue, paid) and client, with the amount outstanding on each.', [
        'status:e(draft|sent|overdue|paid):Only this status.',
        'client:s:Only this client.',
      ]),
      tool('books_record_payment', 'w', 'Record a payment received from a client against one or more invoices.', [
        'invoice_ids!:s[]:Invoices paid.',
        'amount!:n:Amount received.',
        'date:date:Day received.',
        'method:e(bank_transfer|card|check|cash):Method.',
      ]),
      tool(
        'books_send_payment_reminder',
        'wp',
        'Email a client a reminder about an unpaid or overdue invoice, with a link to pay online.',
        ['invoice_id!:s:The invoice.', 'message:s:Extra text for the client.'],
        'Send at most one payment reminder per invoice per week; check books_list_invoices for the last reminder date first.',
      ),
      tool(
        'books_profit_and_loss',
        'r',
        "The business's profit and loss statement for a period: revenue, cost of goods sold, expenses and net income.",
        ['start!:date:First day.', 'end!:date:Last day.', 'compare_previous:b:Compare with the previous period.'],
      ),
      tool('books_add_bill', 'w', 'Enter a supplier bill to pay later, with its due date and expense account.', [
        'supplier!:s:Supplier.',
        'amount!:n:Amount.',
        'due_date!:date:Due date.',
        'account:s:Expense account.',
      ]),
      tool('books_reconcile', 'w', "Match the business bank feed's transactions to invoices and bills for an account.", [
        'account!:s:Bank account.',
        'through:date:Reconcile up to this day.',
      ]),
      tool('books_sales_tax_report', 'r', 'Sales tax or VAT collected and owed for a filing period.', [
        'period!:s:Filing period, e.g. 2026-Q3.',
      ]),
    ],
  },
  {
    domain: 'store',
    tools: [
      tool('store_list_orders', 'r', 'Online store orders with customer, items, total, payment and fulfilment status; newest first.', [
        'status:e(unfulfilled|fulfilled|cancelled|refunded):Only this status.',
        'customer:s:Customer name or email.',
        'since:date:Placed on or after.',
      ]),
      tool('store_get_order', 'r', 'One store order in detail: items, shipping address, payments, refunds and timeline.', [
        'order_id!:s:Order number.',
      ]),
      tool(
        'store_refund_order',
        'wp',
        'Refund all or part of a customer order to the original payment method, optionally restocking the items.',
        [
          'order_id!:s:Order number.',
          'amount:n:Partial amount (default the full order).',
          'restock:b:Return items to inventory.',
          'reason:s:Reason.',
        ],
      ),
      tool('store_adjust_inventory', 'w', 'Set or adjust the stock count of a product variant at a location.', [
        'sku!:s:Product SKU.',
        'delta:i:Change in units.',
        'set_to:i:Exact count.',
        'location:s:Warehouse.',
      ]),
      tool(
        'store_low_stock',
        'r',
        'Products whose inventory is below their reorder point, with days of stock left at the current sales rate.',
        ['location:s:Only this warehouse.'],
      ),
      tool(
        'store_create_discount',
        'w',
        'Create a discount code: percentage or fixed amount, minimum order, usage limit and expiry date.',
        [
          'code!:s:The code customers type.',
          'percent_off:n:Percent off.',
          'amount_off:n:Fixed amount off.',
          'expires:date:Last valid day.',
          'usage_limit:i:Total uses.',
        ],
      ),
      tool('store_update_price', 'w', 'Change the price or compare-at price of a product.', [
        'sku!:s:Product SKU.',
        'price!:n:New price.',
        'compare_at:n:Original price shown struck through.',
      ]),
      tool('store_fulfil_order', 'w', 'Mark an order fulfilled with the carrier and tracking number; the customer is notified.', [
        'order_id!:s:Order number.',
        'carrier:s:Carrier.',
        'tracking_number:s:Tracking number.',
      ]),
    ],
  },
  {
    domain: 'weather',
    tools: [
      tool('weather_forecast', 'r', 'Hourly and 10-day forecast for a place: temperature, chance of rain or snow, and wind.', [
        'location!:s:City or coordinates.',
        'days:i:Days ahead (default 3).',
      ]),
      tool('weather_current', 'r', 'Current conditions at a place: temperature, feels-like, humidity, wind and UV index.', [
        'location!:s:City or coordinates.',
      ]),
      tool('weather_air_quality', 'r', 'Air quality index with pollutant levels (PM2.5, ozone) and pollen counts for a place.', [
        'location!:s:City or coordinates.',
      ]),
      tool('weather_alerts', 'r', 'Severe weather warnings in effect for an area: storms, floods, heat, snow and ice.', [
        'location!:s:City, county or coordinates.',
      ]),
    ],
  },
  {
    domain: 'maps',
    tools: [
      tool(
        'maps_directions',
        'r',
        'Directions between two places by car, transit, bike or on foot, with distance and travel time in current traffic.',
        [
          'origin!:s:Start address or place (default current location).',
          'destination!:s:Destination.',
          'mode:e(drive|transit|bike|walk):Mode.',
          'depart_at:datetime:Departure time.',
        ],
      ),
      tool(
        'maps_nearby',
        'r',
        'Places near a location by category or name (pharmacy, coffee, petrol station), with rating, opening hours and distance.',
        ['query!:s:Category or name.', 'near:s:Address or place (default current location).', 'open_now:b:Only open now.'],
      ),
      tool('maps_geocode', 'r', 'Turn an address into coordinates, or coordinates into the nearest address.', [
        'address:s:Address.',
        'lat:n:Latitude.',
        'lng:n:Longitude.',
      ]),
      tool('maps_save_place', 'wn', "Save a place to one of the user's lists (favourites, want to go) with a note.", [
        'place!:s:Place name or address.',
        'list:s:List name.',
        'note:s:Note.',
      ]),
    ],
  },
];
