/**
 * bench/prompt's generated tools, part E: working things out — a calculator, units, dates, loans,
 * savings, currencies and clocks — the tools a story problem ("I drove 312 miles on 9.6 gallons…")
 * needs. Described the way such tools describe themselves, not in the words of the requests.
 */
import { type CatalogDomain, tool } from './prompt-catalog.js';

export const CATALOG_E: CatalogDomain[] = [
  {
    domain: 'calculator',
    tools: [
      tool(
        'calc_evaluate',
        'r',
        'Evaluate an arithmetic expression exactly: addition, subtraction, multiplication, division, powers, roots, percentages and parentheses.',
        ['expression!:s:The expression, e.g. (12.5 * 4) / 3 or 15% of 80.', 'decimals:i:Digits after the decimal point in the result.'],
      ),
      tool(
        'units_convert',
        'r',
        'Convert a quantity between units of measure: length, mass, volume, temperature, speed and area, metric or imperial.',
        ['value!:n:The quantity.', 'from!:s:Unit to convert from, e.g. km, lb, °F, cup.', 'to!:s:Unit to convert to.'],
      ),
      tool(
        'dates_between',
        'r',
        'The number of days, weeks, months or years between two dates, or the date a given number of days before or after another.',
        [
          'start!:date:First date.',
          'end:date:Second date (default today).',
          'offset_days:i:Days to add to the first date instead.',
          'unit:e(days|weeks|months|years):How to express the span.',
        ],
      ),
    ],
  },
  {
    domain: 'money',
    tools: [
      tool(
        'loan_calculator',
        'r',
        'Monthly payment, total interest and amortisation schedule for a loan or mortgage from its principal, annual rate and term.',
        [
          'principal!:n:Amount borrowed.',
          'annual_rate!:n:Interest rate per year, in percent.',
          'term_months!:i:Length of the loan in months.',
        ],
      ),
      tool('savings_projection', 'r', 'Project the future value of savings with compound interest and optional regular deposits.', [
        'initial!:n:Starting balance.',
        'annual_rate!:n:Yearly interest, in percent.',
        'years!:n:Horizon in years.',
        'monthly_deposit:n:Added every month.',
      ]),
      tool('currency_convert', 'r', "Convert an amount between currencies at today's exchange rate.", [
        'amount!:n:The amount.',
        'from!:s:ISO currency code, e.g. EUR.',
        'to!:s:ISO currency code.',
      ]),
    ],
  },
  {
    domain: 'clock',
    tools: [
      tool('world_clock', 'r', 'The local time in a city or time zone now, or a given time converted between zones.', [
        'place!:s:City or IANA zone.',
        'time:datetime:A time to convert (default now).',
        'from_place:s:Where that time is local.',
      ]),
    ],
  },
];
