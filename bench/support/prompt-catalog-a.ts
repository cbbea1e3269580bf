/** bench/prompt's generated tools, part A: sales, support, shipping, people and cloud operations. */
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
];
