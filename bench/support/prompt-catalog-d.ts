/** bench/prompt's generated tools, part D: everyday services, and lookalikes of the reference plugins (payments, markets, notes, to-dos, video meetings). */
import { type CatalogDomain, tool } from './prompt-catalog.js';

export const CATALOG_D: CatalogDomain[] = [
  {
    domain: 'dining',
    tools: [
      tool(
        'dining_search_restaurants',
        'r',
        'Search restaurants by cuisine, area, price level and availability for a party size and time.',
        [
          'cuisine:s:Cuisine.',
          'area:s:Neighbourhood or city.',
          'party_size:i:Diners.',
          'date:date:Day.',
          'time:time:Time.',
          'price:e($|$$|$$$|$$$$):Price level.',
        ],
      ),
      tool(
        'dining_reserve_table',
        'w',
        'Reserve a table at a restaurant for a party size, date and time.',
        [
          'restaurant_id!:s:From dining_search_restaurants.',
          'party_size!:i:Diners.',
          'date!:date:Day.',
          'time!:time:Time.',
          'requests:s:Special requests.',
        ],
        'Mention the cancellation policy and any deposit when you confirm a reservation.',
      ),
      tool('dining_order_delivery', 'wp', 'Order takeaway or delivery from a restaurant, paid with the saved card.', [
        'restaurant_id!:s:Restaurant.',
        'items!:s[]:Dishes with quantities.',
        'address:s:Delivery address (default home).',
        'tip:n:Tip.',
      ]),
      tool('dining_track_delivery', 'r', 'Where a food delivery order is, and its estimated arrival time.', [
        'order_id:s:Order (default the latest).',
      ]),
      tool('dining_cancel_reservation', 'd', 'Cancel a restaurant reservation.', ['reservation_id!:s:Reservation.']),
    ],
  },
  {
    domain: 'social',
    tools: [
      tool('social_schedule_post', 'w', 'Schedule a post with optional images to one or more social accounts.', [
        'accounts!:s[]:Accounts to post on.',
        'text!:s:Post text.',
        'image_urls:s[]:Images.',
        'publish_at:datetime:When to publish.',
      ]),
      tool('social_post_analytics', 'r', 'Impressions, likes, shares, comments and link clicks for recent posts or one post.', [
        'post_id:s:One post.',
        'days:i:Recent days.',
      ]),
      tool('social_list_mentions', 'r', "Posts and comments that mention the brand's accounts, with sentiment.", [
        'since:datetime:Newer than.',
      ]),
      tool('social_reply', 'wp', 'Reply publicly to a comment or mention from the brand account.', [
        'mention_id!:s:What to reply to.',
        'text!:s:Reply text.',
      ]),
    ],
  },
  {
    domain: 'wiki',
    tools: [
      tool('wiki_search', 'r', 'Search the company wiki: pages, attachments and comments.', [
        'query!:s:Words to find.',
        'space:s:Only this space.',
      ]),
      tool('wiki_get_page', 'r', 'A wiki page with its content, author, last editor and child pages.', ['page_id!:s:Page id or title.']),
      tool('wiki_create_page', 'w', 'Create a wiki page in a space, optionally under a parent page.', [
        'space!:s:Space key.',
        'title!:s:Title.',
        'body!:s:Content (markdown).',
        'parent:s:Parent page.',
      ]),
      tool('wiki_update_page', 'w', 'Replace or append to the content of an existing wiki page.', [
        'page_id!:s:Page.',
        'body!:s:New content.',
        'append:b:Append instead of replacing.',
      ]),
    ],
  },
  {
    domain: 'analytics',
    tools: [
      tool(
        'analytics_run_sql',
        'r',
        'Run a read-only SQL query against the analytics warehouse and return up to 500 rows.',
        ['sql!:s:The query.', 'timeout_s:i:Seconds.'],
        'Always add a LIMIT and a date filter to warehouse queries; tables hold years of events.',
      ),
      tool(
        'analytics_web_traffic',
        'r',
        'Website sessions, users, page views, bounce rate, and top pages and referrers for a date range.',
        ['start!:date:First day.', 'end:date:Last day.', 'site:s:Property.'],
      ),
      tool('analytics_funnel', 'r', 'Conversion funnel between events (visit, signup, trial, purchase) with drop-off at each step.', [
        'steps!:s[]:Event names in order.',
        'start:date:First day.',
        'end:date:Last day.',
      ]),
      tool('analytics_dashboard', 'r', "The numbers on a saved dashboard's charts for a period.", [
        'dashboard!:s:Dashboard name.',
        'period:s:e.g. last_30_days.',
      ]),
      tool('analytics_experiment_results', 'r', 'Results of an A/B test: variants, conversion rates, lift and statistical significance.', [
        'experiment!:s:Experiment name.',
      ]),
    ],
  },
  {
    domain: 'campaigns',
    tools: [
      tool('campaigns_create', 'w', 'Draft a newsletter or marketing email campaign for a subscriber list or segment.', [
        'name!:s:Internal name.',
        'subject!:s:Subject line.',
        'audience!:s:List or segment.',
        'html:s:Content.',
      ]),
      tool('campaigns_send', 'wp', 'Send or schedule a drafted campaign to its audience.', [
        'campaign_id!:s:Campaign.',
        'send_at:datetime:Schedule time.',
      ]),
      tool('campaigns_stats', 'r', 'Opens, clicks, bounces and unsubscribes for a sent campaign, with top links.', [
        'campaign_id!:s:Campaign.',
      ]),
      tool('campaigns_add_subscriber', 'w', 'Add or update a subscriber on a mailing list with tags and merge fields.', [
        'list!:s:Mailing list.',
        'email!:s:Address.',
        'tags:s[]:Tags.',
      ]),
      tool('campaigns_unsubscribe', 'wn', 'Unsubscribe an address from a mailing list.', ['list!:s:Mailing list.', 'email!:s:Address.']),
    ],
  },
  {
    domain: 'esign',
    tools: [
      tool('esign_send_envelope', 'wp', 'Send a document for electronic signature to one or more signers in order.', [
        'document!:s:Document name or URL.',
        'signers!:s[]:Names and emails in signing order.',
        'message:s:Message to signers.',
      ]),
      tool('esign_status', 'r', 'Who has signed, viewed or not yet opened a document sent for signature.', ['envelope_id!:s:Envelope.']),
      tool('esign_list_contracts', 'r', 'Signed contracts with parties, value, effective date and renewal or expiry date.', [
        'expiring_within_days:i:Only those expiring soon.',
        'party:s:Counterparty.',
      ]),
      tool('esign_void_envelope', 'd', 'Void an envelope that is out for signature; signers can no longer sign it.', [
        'envelope_id!:s:Envelope.',
        'reason!:s:Reason shown to signers.',
      ]),
    ],
  },
  {
    domain: 'health',
    tools: [
      tool(
        'health_book_appointment',
        'w',
        'Book an appointment with a doctor, dentist or specialist at the patient portal, choosing from open slots.',
        ['provider!:s:Doctor or clinic.', 'reason!:s:Reason for the visit.', 'date:date:Preferred day.', 'time:time:Preferred time.'],
      ),
      tool('health_list_medications', 'r', 'Current prescriptions with dose, prescriber, pharmacy and refills remaining.', []),
      tool('health_request_refill', 'w', 'Ask the pharmacy and prescriber to refill a prescription.', [
        'medication!:s:Medication name.',
        'pharmacy:s:Pharmacy (default the usual one).',
      ]),
      tool('health_find_provider', 'r', 'Find in-network doctors by specialty and location, with ratings and the next open slot.', [
        'specialty!:s:Specialty.',
        'near:s:Location.',
      ]),
      tool('health_lab_results', 'r', 'Recent lab test results with reference ranges and flagged values.', [
        'test:s:Test name.',
        'since:date:Since.',
      ]),
    ],
  },
  {
    domain: 'school',
    tools: [
      tool('school_list_assignments', 'r', "A student's upcoming homework and assignments with course and due date.", [
        'student:s:Which child.',
        'course:s:Only this course.',
      ]),
      tool('school_grades', 'r', "A student's current grades per course and recent marked work.", ['student:s:Which child.']),
      tool('school_message_teacher', 'wp', "Send a message to a child's teacher through the school portal.", [
        'teacher!:s:Teacher.',
        'subject!:s:Subject.',
        'body!:s:Message.',
      ]),
      tool('school_report_absence', 'w', 'Report that a student will be absent or late, with the reason.', [
        'student!:s:Which child.',
        'date!:date:Day.',
        'reason!:s:Reason.',
      ]),
    ],
  },
  {
    domain: 'property',
    tools: [
      tool('property_list_units', 'r', 'Rental units with tenant, rent, lease end and balance owed.', ['building:s:Only this building.']),
      tool('property_maintenance_request', 'w', 'Open a maintenance work order for a unit and dispatch a vendor.', [
        'unit!:s:Unit.',
        'issue!:s:What is broken.',
        'urgency:e(routine|urgent|emergency):Urgency.',
      ]),
      tool('property_expiring_leases', 'r', 'Leases ending within a window, with renewal status.', ['within_days:i:Window (default 60).']),
    ],
  },
  {
    domain: 'car',
    tools: [
      tool('car_status', 'r', "The car's battery charge or fuel level, range, location, tyre pressures and lock state.", []),
      tool('car_precondition', 'wn', "Heat or cool the car's cabin before a drive.", [
        'target_c:n:Cabin temperature.',
        'minutes:i:For how long.',
      ]),
      tool('car_book_service', 'w', 'Book a service appointment at a dealership or garage.', [
        'garage!:s:Garage.',
        'service!:s:What needs doing.',
        'date:date:Preferred day.',
      ]),
      tool('car_find_chargers', 'r', 'EV charging stations near a place or along a route, with connector type, speed and availability.', [
        'near:s:Place or route.',
        'min_kw:n:Minimum power.',
      ]),
    ],
  },
  {
    domain: 'news',
    tools: [
      tool('news_headlines', 'r', 'Top headlines by topic or region from the subscribed news sources.', [
        'topic:s:Topic.',
        'region:s:Region.',
      ]),
      tool('news_search', 'r', 'Search recent news articles by keywords, source and date.', ['query!:s:Keywords.', 'since:date:Since.']),
    ],
  },
  {
    domain: 'translate',
    tools: [
      tool('translate_text', 'r', 'Translate text between languages, keeping formatting.', [
        'text!:s:Text.',
        'target!:s:Target language.',
        'source:s:Source language (default detect).',
      ]),
      tool('translate_detect_language', 'r', 'Detect the language a text is written in.', ['text!:s:Text.']),
    ],
  },
  {
    domain: 'vault',
    tools: [
      tool('vault_get_login', 'r', 'Look up a saved login (username and password) in the password manager.', ['site!:s:Website or app.']),
      tool('vault_generate_password', 'r', 'Generate a strong random password or passphrase.', [
        'length:i:Characters.',
        'passphrase:b:Words instead.',
      ]),
      tool('vault_breach_report', 'r', 'Saved logins that are weak, reused or exposed in known data breaches.', []),
    ],
  },
  {
    domain: 'photos',
    tools: [
      tool('photos_search', 'r', 'Search the photo library by people, places, things and dates.', [
        'query!:s:What is in the photo.',
        'year:i:Year.',
      ]),
      tool('photos_create_album', 'wn', 'Create an album from photos.', ['title!:s:Album title.', 'photo_ids:s[]:Photos.']),
      tool('photos_share_album', 'wp', 'Share an album with people by link or invitation.', ['album!:s:Album.', 'with!:s[]:Emails.']),
    ],
  },
  {
    domain: 'podcasts',
    tools: [
      tool('podcasts_search', 'r', 'Search podcasts and episodes by topic, show or guest.', ['query!:s:Topic, show or guest.']),
      tool('podcasts_subscribe', 'wn', 'Follow a podcast so new episodes download.', ['show!:s:Podcast.']),
    ],
  },
  {
    domain: 'tickets',
    tools: [
      tool('tickets_search_events', 'r', 'Concerts, sports, theatre and comedy events near a city, with dates and ticket prices.', [
        'query:s:Artist, team or show.',
        'city:s:City.',
        'from:date:From.',
        'to:date:To.',
      ]),
      tool('tickets_buy', 'wp', 'Buy tickets for an event, paid with the saved card.', [
        'event_id!:s:Event.',
        'quantity!:i:Tickets.',
        'section:s:Seating.',
      ]),
    ],
  },
  {
    domain: 'pay',
    tools: [
      tool('pay_send_money', 'wp', 'Send money to a friend by phone, email or username from the linked account.', [
        'to!:s:Recipient.',
        'amount!:n:Amount.',
        'note:s:What it is for.',
      ]),
      tool('pay_request_money', 'w', 'Request money from a friend, with a note.', [
        'from!:s:Who owes.',
        'amount!:n:Amount.',
        'note:s:What it is for.',
      ]),
      tool('pay_split_expense', 'w', 'Split a shared expense among friends and send each their share as a request.', [
        'total!:n:Total.',
        'people!:s[]:Who shares it.',
        'note:s:What it was.',
      ]),
    ],
  },
  {
    domain: 'markets',
    tools: [
      tool('markets_quote', 'r', 'Real-time stock, ETF or crypto quote: price, change today, volume and 52-week range.', [
        'symbol!:s:Ticker symbol.',
      ]),
      tool('markets_company_financials', 'r', "A listed company's revenue, earnings, margins and valuation ratios by quarter.", [
        'symbol!:s:Ticker symbol.',
      ]),
      tool('markets_watchlist', 'r', 'Quotes for the symbols on a watchlist, with price alerts.', ['watchlist:s:Name (default main).']),
    ],
  },
  {
    domain: 'notes',
    tools: [
      tool('notes_create', 'wn', 'Create a note in the notes app, in a notebook, with tags.', [
        'title!:s:Title.',
        'body!:s:Text.',
        'notebook:s:Notebook.',
      ]),
      tool('notes_search', 'r', 'Search notes in the notes app by words, tag or notebook.', ['query!:s:Words.', 'notebook:s:Notebook.']),
      tool('notes_append', 'wn', 'Append text to an existing note.', ['note_id!:s:Note.', 'text!:s:Text to add.']),
    ],
  },
  {
    domain: 'todo',
    tools: [
      tool('todo_add', 'wn', 'Add a task to a to-do list, with an optional due date and priority.', [
        'title!:s:The task.',
        'list:s:List (default Inbox).',
        'due:date:Due date.',
        'priority:e(low|medium|high):Priority.',
      ]),
      tool('todo_list', 'r', 'Open tasks in a to-do list, overdue first.', ['list:s:List.', 'include_done:b:Also completed tasks.']),
      tool('todo_complete', 'wn', 'Mark a task done.', ['task_id!:s:Task.']),
      tool('todo_delete', 'd', 'Delete a task from a to-do list.', ['task_id!:s:Task.']),
    ],
  },
  {
    domain: 'meet',
    tools: [
      tool('meet_create_link', 'wn', 'Create a video meeting room link to share.', [
        'title:s:Meeting title.',
        'waiting_room:b:Enable the waiting room.',
      ]),
      tool('meet_schedule', 'w', 'Schedule a video meeting and send invitations to the participants.', [
        'title!:s:Title.',
        'start!:datetime:Start.',
        'minutes:i:Length.',
        'invitees:s[]:Emails.',
      ]),
      tool('meet_list_recordings', 'r', 'Recordings of past video meetings with duration and sharing link.', ['since:date:Since.']),
      tool('meet_transcript', 'r', 'The transcript and AI summary of a recorded video meeting.', ['recording_id!:s:Recording.']),
    ],
  },
];
