/** bench/prompt's generated tools, part A: sales, support, operations, engineering, leisure. */
import { type CatalogDomain, tool } from './prompt-catalog.js';

export const CATALOG_A: CatalogDomain[] = [
  {
    domain: 'crm',
    tools: [
      tool(
        'crm_search_contacts',
        'r',
        "Search CRM contacts by name, company, email or phone number. Returns each contact's id, account owner and last activity.",
        [
          'query!:s:Name, company, email or phone fragment.',
          'owner:s:Only contacts owned by this sales rep.',
          'limit:i:Most results (default 20).',
        ],
      ),
      tool('crm_get_contact', 'r', "One contact's full record: company, job title, phone numbers, open deals and the activity timeline.", [
        "contact_id!:s:The contact's id, e.g. 'c_10482'.",
      ]),
      tool('crm_create_contact', 'w', 'Add a person to the CRM with their company, role and how you met them.', [
        'first_name!:s:Given name.',
        'last_name!:s:Family name.',
        'email:s:Work email address.',
        'company:s:Company or account name.',
        'source:e(referral|event|website|cold_outreach|partner):How the contact was acquired.',
      ]),
      tool(
        'crm_list_deals',
        'r',
        'List the deals in the sales pipeline with amount, stage, probability and expected close date. Filter by stage, owner or closing window.',
        [
          'stage:e(prospecting|qualified|proposal|negotiation|closed_won|closed_lost):Only deals in this stage.',
          'owner:s:Only deals owned by this rep.',
          'closing_before:date:Only deals expected to close on or before this day.',
        ],
      ),
      tool(
        'crm_update_deal_stage',
        'w',
        'Move an opportunity to another pipeline stage, optionally updating its amount and expected close date.',
        [
          'deal_id!:s:The deal id.',
          'stage!:e(prospecting|qualified|proposal|negotiation|closed_won|closed_lost):The new stage.',
          'amount:n:New deal value.',
          'close_date:date:New expected close date.',
          'note:s:Why it moved.',
        ],
        'When a deal is marked closed_lost, ask for the loss reason and pass it as note.',
      ),
      tool('crm_log_activity', 'wn', 'Log a call, meeting or note against a contact or deal so the account history stays complete.', [
        'related_id!:s:Contact or deal id.',
        'kind!:e(call|meeting|note|email):What happened.',
        'summary!:s:What was discussed and agreed.',
        'occurred_at:datetime:When (default now).',
      ]),
      tool('crm_create_lead', 'w', 'Capture a new sales lead with its source and estimated value; it is routed to a rep by territory.', [
        'company!:s:Prospect company.',
        'contact_name:s:Who we spoke to.',
        'estimated_value:n:Rough deal size.',
        'source:s:Where the lead came from.',
      ]),
      tool(
        'crm_merge_contacts',
        'd',
        "Merge two duplicate contact records: the secondary's activities and deals move to the primary, and the secondary is deleted.",
        ['primary_id!:s:The record to keep.', 'secondary_id!:s:The duplicate to fold in and delete.'],
      ),
    ],
  },
  {
    domain: 'helpdesk',
    tools: [
      tool(
        'helpdesk_search_tickets',
        'r',
        'Search support tickets by keyword, requester, status or priority. Returns subject, status, assignee and age.',
        [
          'query:s:Words in the subject or conversation.',
          'requester:s:Customer name or email.',
          'status:e(new|open|pending|solved|closed):Ticket status.',
          'priority:e(low|normal|high|urgent):Priority.',
        ],
      ),
      tool('helpdesk_get_ticket', 'r', "A support ticket's full conversation with the customer, internal notes, tags and SLA timers.", [
        'ticket_id!:i:Ticket number.',
      ]),
      tool('helpdesk_create_ticket', 'w', 'Open a support ticket on behalf of a customer with a subject, description and priority.', [
        'requester_email!:s:The customer.',
        'subject!:s:One-line summary of the problem.',
        'description!:s:What the customer reported.',
        'priority:e(low|normal|high|urgent):Default normal.',
      ]),
      tool(
        'helpdesk_reply_ticket',
        'wp',
        'Reply to the customer on a ticket, or add an internal note, and optionally set the status afterwards.',
        [
          'ticket_id!:i:Ticket number.',
          'body!:s:The reply.',
          'internal:b:Internal note the customer does not see.',
          'status:e(open|pending|solved):Status after replying.',
        ],
        'Use internal=true for anything the customer must not see, such as workarounds that are not yet approved.',
      ),
      tool('helpdesk_assign_ticket', 'wn', 'Assign a ticket to an agent or a support group.', [
        'ticket_id!:i:Ticket number.',
        'assignee:s:Agent name or email.',
        'group:s:Support group, e.g. Billing or Tier 2.',
      ]),
      tool(
        'helpdesk_escalate_ticket',
        'w',
        'Escalate a ticket to tier-2 support or engineering with a reason; raises its priority and pages the on-call lead.',
        ['ticket_id!:i:Ticket number.', 'reason!:s:Why it needs escalation.', 'to:e(tier2|engineering|management):Where to escalate.'],
      ),
      tool(
        'helpdesk_list_sla_breaches',
        'r',
        'Tickets that breached, or will breach within the hour, their first-response or resolution SLA targets.',
        ['group:s:Only this support group.', 'within_minutes:i:Include tickets breaching within this many minutes (default 60).'],
      ),
      tool(
        'helpdesk_satisfaction_scores',
        'r',
        'CSAT scores and customer comments from satisfaction surveys over a period, per agent or group.',
        ['since:date:Start of the period.', 'until:date:End of the period.', 'group_by:e(agent|group|week):How to break it down.'],
      ),
    ],
  },
  {
    domain: 'shipping',
    tools: [
      tool(
        'shipping_track_package',
        'r',
        'Track a parcel by its tracking number: carrier, current location, scan history and estimated delivery date.',
        ['tracking_number!:s:The carrier tracking number.', 'carrier:e(ups|fedex|usps|dhl|auto):Carrier (default auto-detect).'],
      ),
      tool(
        'shipping_get_rates',
        'r',
        'Compare carrier rates and transit times for a parcel from its origin and destination postcodes, weight and dimensions.',
        [
          'from_postcode!:s:Origin postcode.',
          'to_postcode!:s:Destination postcode.',
          'weight_kg!:n:Parcel weight in kilograms.',
          'dimensions_cm:s:Length x width x height, e.g. 30x20x10.',
        ],
      ),
      tool(
        'shipping_create_label',
        'w',
        'Buy postage from a carrier and get a printable shipping label PDF with its tracking number.',
        [
          'rate_id!:s:The rate chosen from shipping_get_rates.',
          'to_address!:s:Recipient name and full address.',
          'reference:s:Order number to print on the label.',
        ],
        'Always confirm the recipient address with shipping_validate_address before buying a label.',
      ),
      tool('shipping_schedule_pickup', 'w', 'Schedule a carrier pickup at an address for one or more labelled parcels.', [
        'address!:s:Pickup address.',
        'date!:date:Pickup day.',
        'ready_time:time:When the parcels are ready (HH:MM).',
        'label_ids:s[]:Labels to hand over.',
      ]),
      tool(
        'shipping_list_shipments',
        'r',
        'Outgoing shipments with their status (label created, in transit, delivered, exception), newest first.',
        ['status:e(label_created|in_transit|delivered|exception):Only this status.', 'since:date:Shipped on or after.'],
      ),
      tool('shipping_void_label', 'd', 'Void an unused shipping label and request a refund of its postage.', [
        'label_id!:s:The label to void.',
      ]),
      tool(
        'shipping_validate_address',
        'r',
        'Check and standardise a postal address; says whether it is deliverable and suggests corrections.',
        ['address!:s:The address as written.', 'country:s:Two-letter country code.'],
      ),
      tool('shipping_create_return', 'w', "Create a prepaid return label for a customer's order and email it to them.", [
        'order_id!:s:The order being returned.',
        'reason:s:Return reason.',
      ]),
    ],
  },
  {
    domain: 'hr',
    tools: [
      tool('hr_request_time_off', 'w', 'Submit a vacation, sick or personal leave request for a date range to your manager for approval.', [
        'start_date!:date:First day off.',
        'end_date!:date:Last day off.',
        'type!:e(vacation|sick|personal|parental):Kind of leave.',
        'note:s:Note for the manager.',
      ]),
      tool(
        'hr_get_leave_balance',
        'r',
        'How many vacation, sick and personal days an employee has left this year, and which days are already booked.',
        ['employee:s:Name or employee id (default the user).'],
      ),
      tool('hr_lookup_employee', 'r', 'Find a colleague in the company directory: title, team, manager, office, phone and working hours.', [
        'query!:s:Name, team or title.',
      ]),
      tool('hr_list_open_positions', 'r', 'Open job requisitions with department, location, hiring manager and number of applicants.', [
        'department:s:Only this department.',
        'location:s:Only this office or remote.',
      ]),
      tool('hr_get_payslip', 'r', 'Fetch a payslip for a pay period: gross pay, taxes, deductions and net pay.', [
        'period!:s:Pay period, e.g. 2026-08.',
      ]),
      tool(
        'hr_submit_expense',
        'w',
        'File an expense claim with amount, category, date and a receipt image for reimbursement.',
        [
          'amount!:n:Amount spent.',
          'currency:s:ISO currency code.',
          'category!:e(travel|meals|equipment|training|other):Expense category.',
          'date!:date:Day of the purchase.',
          'receipt_url:s:Link to the receipt image.',
        ],
        'Ask for the receipt before filing an expense claim over 75 in any currency.',
      ),
      tool('hr_start_onboarding', 'w', "Start a new hire's onboarding checklist: accounts, laptop, buddy and first-week schedule.", [
        'name!:s:New hire.',
        'start_date!:date:First day.',
        'team!:s:Team they join.',
        'manager:s:Their manager.',
      ]),
    ],
  },
  {
    domain: 'cloud',
    tools: [
      tool('cloud_list_instances', 'r', 'List virtual machines with region, size, state and uptime, optionally filtered by tag or name.', [
        'region:s:Only this region.',
        'tag:s:key=value tag filter.',
        'state:e(running|stopped|all):Default running.',
      ]),
      tool('cloud_restart_instance', 'w', 'Reboot a virtual machine instance. Open connections on it are dropped.', [
        'instance!:s:Instance name or id.',
        'force:b:Hard reset instead of a graceful reboot.',
      ]),
      tool(
        'cloud_scale_service',
        'w',
        'Change the number of running replicas of a container service, or its autoscaling minimum and maximum.',
        ['service!:s:Service name.', 'replicas:i:Exact replica count.', 'min:i:Autoscaling minimum.', 'max:i:Autoscaling maximum.'],
      ),
      tool('cloud_tail_logs', 'r', 'Recent log lines from a service, filtered by level and text, over a time window.', [
        'service!:s:Service name.',
        'level:e(debug|info|warn|error):Lowest level to show.',
        'contains:s:Text filter.',
        'minutes:i:How far back (default 15).',
      ]),
      tool('cloud_list_alerts', 'r', 'Monitoring alerts that are firing now, with severity, service, and when they started.', [
        'severity:e(critical|warning|info):Only this severity.',
        'service:s:Only this service.',
      ]),
      tool('cloud_ack_alert', 'wn', 'Acknowledge a firing alert so the pager stops escalating it; optionally add a note.', [
        'alert_id!:s:The alert.',
        'note:s:What you are doing about it.',
      ]),
      tool(
        'cloud_cost_report',
        'r',
        'Cloud spend broken down by service, project and region for a period, with the forecast for the month.',
        ['start!:date:First day.', 'end:date:Last day (default today).', 'group_by:e(service|project|region|tag):Breakdown.'],
      ),
      tool('cloud_create_dns_record', 'w', 'Add a DNS record (A, AAAA, CNAME, TXT or MX) to a hosted zone.', [
        'zone!:s:Domain, e.g. example.com.',
        'name!:s:Record name.',
        'type!:e(A|AAAA|CNAME|TXT|MX):Record type.',
        'value!:s:Record value.',
        'ttl:i:Seconds.',
      ]),
      tool(
        'cloud_deploy',
        'wp',
        'Deploy a build of a service to staging or production with a rolling update.',
        ['service!:s:Service name.', 'version!:s:Build tag or commit.', 'environment!:e(staging|production):Target environment.'],
        'Deploy to staging before production, and check cloud_list_alerts for ten minutes after a production deploy.',
      ),
    ],
  },
  {
    domain: 'music',
    tools: [
      tool('music_play', 'wn', 'Start playing a song, album, artist, genre or playlist on a speaker or on the phone.', [
        'query!:s:What to play.',
        'device:s:Speaker or room name (default the active device).',
        'shuffle:b:Shuffle.',
      ]),
      tool('music_pause', 'wn', 'Pause or resume playback, or skip to the next or previous track.', [
        'action!:e(pause|resume|next|previous):What to do.',
      ]),
      tool('music_search_catalog', 'r', 'Search the streaming catalogue for songs, albums, artists and public playlists.', [
        'query!:s:Words to search.',
        'type:e(track|album|artist|playlist):Kind of result.',
      ]),
      tool('music_create_playlist', 'wn', 'Create a new playlist in the library, optionally seeded with tracks.', [
        'name!:s:Playlist name.',
        'tracks:s[]:Track ids to add.',
        'public:b:Visible on the profile.',
      ]),
      tool('music_add_to_playlist', 'wn', "Add tracks to one of the user's playlists.", [
        'playlist!:s:Playlist name or id.',
        'tracks!:s[]:Track ids.',
      ]),
      tool('music_now_playing', 'r', 'What is playing right now: track, artist, album and on which device.', []),
      tool('music_recommend', 'r', 'Recommend tracks like given songs or artists, or for a mood or genre.', [
        'seed_tracks:s[]:Songs to start from.',
        'seed_artists:s[]:Artists to start from.',
        'mood:s:Mood or genre, e.g. focus, upbeat, chill.',
      ]),
    ],
  },
  {
    domain: 'travel',
    tools: [
      tool(
        'travel_search_flights',
        'r',
        'Search flights between two airports on given dates for a number of passengers and a cabin class; returns fares, stops and durations.',
        [
          'origin!:s:Departure airport or city.',
          'destination!:s:Arrival airport or city.',
          'depart_date!:date:Outbound day.',
          'return_date:date:Return day for a round trip.',
          'passengers:i:Travellers (default 1).',
          'cabin:e(economy|premium|business|first):Cabin.',
        ],
      ),
      tool('travel_book_flight', 'wp', 'Book a flight offer for the named passengers and pay with the saved card.', [
        'offer_id!:s:From travel_search_flights.',
        'passengers!:s[]:Full names as on the passport.',
      ]),
      tool(
        'travel_search_hotels',
        'r',
        'Find hotels in a city or near a landmark for check-in and check-out dates, with nightly price, guest rating and cancellation policy.',
        [
          'location!:s:City, neighbourhood or landmark.',
          'check_in!:date:Arrival.',
          'check_out!:date:Departure.',
          'guests:i:Guests.',
          'max_price:n:Most per night.',
        ],
      ),
      tool('travel_book_hotel', 'wp', 'Reserve a hotel room from a search result with the saved card.', [
        'offer_id!:s:From travel_search_hotels.',
        'guest_name!:s:Name on the booking.',
      ]),
      tool('travel_get_itinerary', 'r', "The user's upcoming trips: flights, hotel stays, car rentals and their confirmation numbers.", [
        'trip:s:Trip name or destination (default all upcoming).',
      ]),
      tool('travel_flight_status', 'r', 'Live status of a flight: departure and arrival times, delays, gate, terminal and baggage belt.', [
        'flight_number!:s:Airline code and number, e.g. BA 117.',
        'date:date:Day of departure (default today).',
      ]),
      tool('travel_check_in', 'w', 'Check in online for a booked flight, choose seats and get the boarding passes.', [
        'confirmation!:s:Booking reference.',
        'seat:s:Preferred seat.',
      ]),
      tool('travel_cancel_booking', 'd', 'Cancel a flight, hotel or car rental booking and report the refund or travel credit.', [
        'confirmation!:s:Booking reference.',
      ]),
      tool(
        'travel_entry_requirements',
        'r',
        'Visa rules, passport validity and other entry requirements for a nationality travelling to a country.',
        ['nationality!:s:Passport country.', 'destination!:s:Country visited.', 'purpose:e(tourism|business|transit):Purpose.'],
      ),
    ],
  },
  {
    domain: 'recipes',
    tools: [
      tool(
        'recipes_search',
        'r',
        'Find recipes by ingredients on hand, cuisine, diet (vegetarian, vegan, gluten-free) and total cooking time.',
        [
          'ingredients:s[]:What to use up.',
          'cuisine:s:Cuisine.',
          'diet:e(any|vegetarian|vegan|gluten_free|dairy_free):Diet.',
          'max_minutes:i:Total time limit.',
        ],
      ),
      tool('recipes_get', 'r', "A recipe's ingredients with quantities, method steps, servings and prep time.", [
        'recipe_id!:s:Recipe id.',
      ]),
      tool(
        'recipes_scale',
        'r',
        "Scale a recipe's ingredient quantities to another number of servings, converting between metric and US units if asked.",
        ['recipe_id!:s:Recipe id.', 'servings!:i:Servings wanted.', 'units:e(metric|us):Unit system.'],
      ),
      tool(
        'recipes_shopping_list',
        'wn',
        'Turn one or more recipes into a grocery list grouped by store aisle, minus what is already in the pantry.',
        ['recipe_ids!:s[]:Recipes to shop for.'],
        'Check the pantry with recipes_pantry before building a grocery list.',
      ),
      tool('recipes_nutrition', 'r', 'Calories, protein, carbohydrates, fat and fibre per serving for a recipe or a list of ingredients.', [
        'recipe_id:s:Recipe id.',
        'ingredients:s[]:Ingredients with quantities.',
      ]),
      tool('recipes_pantry', 'r', 'What is in the pantry, fridge and freezer, with use-by dates for perishables.', []),
      tool(
        'recipes_meal_plan',
        'wn',
        'Plan breakfasts, lunches and dinners for a week around dietary preferences, people to feed and a budget.',
        ['people!:i:How many to feed.', 'diet:s:Dietary preferences.', 'budget:n:Weekly budget.'],
      ),
      tool('recipes_substitute', 'r', 'Suggest substitutes for an ingredient (for example buttermilk or eggs) with the ratio to use.', [
        'ingredient!:s:What is missing.',
        'recipe_id:s:The recipe, for context.',
      ]),
    ],
  },
  {
    domain: 'fitness',
    tools: [
      tool('fitness_log_workout', 'wn', 'Log a workout: type (run, ride, strength, swim, yoga), duration, distance and perceived effort.', [
        'type!:e(run|ride|strength|swim|yoga|walk|other):Activity.',
        'minutes!:n:Duration.',
        'distance_km:n:Distance.',
        'effort:i:1-10.',
        'when:datetime:Start time (default now).',
      ]),
      tool('fitness_workout_history', 'r', 'Past workouts with weekly totals for distance and time, and personal records.', [
        'type:s:Only this activity.',
        'weeks:i:How many weeks back (default 4).',
      ]),
      tool('fitness_log_weight', 'wn', 'Record a body weight measurement and optionally body-fat percentage.', [
        'kg!:n:Weight in kilograms.',
        'body_fat:n:Percent.',
      ]),
      tool(
        'fitness_daily_activity',
        'r',
        'Steps, active minutes, calories burned and resting heart rate from the wearable for a day or range.',
        ['date:date:Day (default today).', 'days:i:Number of days ending on date.'],
      ),
      tool('fitness_sleep_summary', 'r', 'Sleep duration, stages (deep, light, REM) and sleep score per night from the wearable.', [
        'nights:i:How many recent nights (default 1).',
      ]),
      tool(
        'fitness_training_plan',
        'w',
        'Generate a training plan for a race (5k, 10k, half marathon, marathon) with weekly sessions up to race day.',
        ['event!:e(5k|10k|half_marathon|marathon):Race distance.', 'race_date!:date:Race day.', 'days_per_week:i:Training days.'],
      ),
      tool('fitness_book_class', 'w', "Book a spot in a class (spin, yoga, HIIT, pilates) at the user's gym.", [
        'class!:s:Class name.',
        'date!:date:Day.',
        'time:time:Start time.',
      ]),
    ],
  },
  {
    domain: 'home',
    tools: [
      tool('home_set_thermostat', 'wn', 'Set the heating or cooling target temperature for a zone, or switch the thermostat mode.', [
        'zone:s:Room or zone (default whole house).',
        'target_c:n:Target in Celsius.',
        'mode:e(heat|cool|auto|off|eco):Mode.',
      ]),
      tool('home_lights', 'wn', 'Turn lights on or off, dim them or change their colour, by room or by light name.', [
        'target!:s:Room or light name.',
        'on:b:On or off.',
        'brightness:i:0-100.',
        'color:s:Colour name.',
      ]),
      tool('home_lock', 'w', 'Lock or unlock a smart door lock and report its state.', [
        'door!:s:Which door.',
        'action!:e(lock|unlock):What to do.',
      ]),
      tool('home_camera_snapshot', 'r', 'Take a still image from a security camera and describe recent motion events.', [
        'camera!:s:Camera name.',
        'events_since:datetime:Motion events since.',
      ]),
      tool('home_run_scene', 'wn', 'Run a saved scene or routine, such as good night, movie time or away.', ['scene!:s:Scene name.']),
      tool('home_energy_usage', 'r', 'Electricity and gas consumption by day or hour, with cost and the devices that used the most.', [
        'start:date:First day.',
        'end:date:Last day.',
        'resolution:e(hour|day|month):Granularity.',
      ]),
      tool('home_list_devices', 'r', 'Every connected device with its room, type, online state and battery level.', [
        'room:s:Only this room.',
      ]),
      tool('home_arm_security', 'w', 'Arm or disarm the alarm system in home, away or night mode.', [
        'mode!:e(disarm|home|away|night):Alarm mode.',
        'code:s:Alarm code.',
      ]),
    ],
  },
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
];
