// finance_workflows' seeded data: Jamie Chen's accounts as of the data's fixed 'today' (2026-09-20).
// Transactions come from a seeded generator (mulberry32), so every home gets the same rows.
import type Database from 'better-sqlite3';
import { addDays, mulberry32 } from '../_lib/util.js';

export const TODAY = '2026-09-20';
const TX_FROM = '2026-06-01';

const cents = (n: number) => Math.round(n * 100) / 100;

const ACCOUNTS = [
  {
    id: 1,
    name: 'Everyday Checking',
    institution: 'Woodgrove Bank',
    type: 'checking',
    last4: '4821',
    balance: 6842.17,
    credit_limit: null,
    rate: 0.01,
  },
  {
    id: 2,
    name: 'High-Yield Savings',
    institution: 'Woodgrove Bank',
    type: 'savings',
    last4: '7730',
    balance: 24310.55,
    credit_limit: null,
    rate: 4.1,
  },
  {
    id: 3,
    name: 'Rewards Visa',
    institution: 'Wingtip Bank',
    type: 'credit_card',
    last4: '1094',
    balance: -3150.4,
    credit_limit: 15000,
    rate: 22.49,
  },
  {
    id: 4,
    name: 'Cash Back Mastercard',
    institution: 'Contoso Card',
    type: 'credit_card',
    last4: '5517',
    balance: -642.88,
    credit_limit: 8000,
    rate: 19.99,
  },
  {
    id: 5,
    name: 'Individual Brokerage',
    institution: 'Fabrikam Investments',
    type: 'brokerage',
    last4: '2203',
    balance: 0,
    credit_limit: null,
    rate: null,
  },
  {
    id: 6,
    name: '401(k)',
    institution: 'Northwind Labs Retirement Plan',
    type: 'retirement',
    last4: '9012',
    balance: 0,
    credit_limit: null,
    rate: null,
  },
  {
    id: 7,
    name: 'Auto Loan',
    institution: 'Tailspin Credit Union',
    type: 'loan',
    last4: '3381',
    balance: -11480.0,
    credit_limit: null,
    rate: 5.9,
  },
  {
    id: 8,
    name: 'Mortgage',
    institution: 'Woodgrove Bank',
    type: 'mortgage',
    last4: '6650',
    balance: -286412.33,
    credit_limit: null,
    rate: 3.25,
  },
  {
    id: 9,
    name: 'Home at 12 Alder Court (estimated value)',
    institution: '',
    type: 'property',
    last4: '',
    balance: 512000,
    credit_limit: null,
    rate: null,
  },
];

const HOLDINGS = [
  {
    account_id: 5,
    symbol: 'VTI',
    name: 'Total US Stock Market ETF',
    asset_class: 'US stocks',
    shares: 180,
    price: 289.4,
    cost_basis: 212.1,
  },
  {
    account_id: 5,
    symbol: 'VXUS',
    name: 'Total International Stock ETF',
    asset_class: 'International stocks',
    shares: 310,
    price: 64.85,
    cost_basis: 55.2,
  },
  { account_id: 5, symbol: 'BND', name: 'Total Bond Market ETF', asset_class: 'Bonds', shares: 150, price: 72.3, cost_basis: 74.8 },
  { account_id: 5, symbol: 'AAPL', name: 'Apple Inc.', asset_class: 'US stocks', shares: 40, price: 231.5, cost_basis: 148.0 },
  { account_id: 5, symbol: 'MSFT', name: 'Microsoft Corp.', asset_class: 'US stocks', shares: 25, price: 438.2, cost_basis: 301.5 },
  { account_id: 5, symbol: 'CASH', name: 'Settlement cash', asset_class: 'Cash', shares: 2415.6, price: 1, cost_basis: 1 },
  {
    account_id: 6,
    symbol: 'TDF55',
    name: 'Target Retirement 2055 Fund',
    asset_class: 'Target-date fund',
    shares: 2410,
    price: 41.72,
    cost_basis: 33.1,
  },
  { account_id: 6, symbol: 'SPIDX', name: 'S&P 500 Index Fund', asset_class: 'US stocks', shares: 210, price: 186.3, cost_basis: 140.0 },
  { account_id: 6, symbol: 'STBL', name: 'Stable Value Fund', asset_class: 'Stable value', shares: 1500, price: 10.0, cost_basis: 10.0 },
];

// status 'due' or 'paid'; account_id pays it (autopay) or is where it is usually paid from.
const BILLS = [
  {
    payee: 'Lakeside Medical',
    kind: 'medical copay',
    amount: 35.0,
    due_date: '2026-09-15',
    autopay: 0,
    account_id: 1,
    status: 'due',
    min_payment: null,
  },
  {
    payee: 'Streamly',
    kind: 'subscription',
    amount: 15.49,
    due_date: '2026-09-21',
    autopay: 1,
    account_id: 3,
    status: 'due',
    min_payment: null,
  },
  {
    payee: 'Litware Internet',
    kind: 'internet',
    amount: 69.99,
    due_date: '2026-09-22',
    autopay: 1,
    account_id: 1,
    status: 'due',
    min_payment: null,
  },
  {
    payee: 'Riverside Water',
    kind: 'water',
    amount: 46.75,
    due_date: '2026-09-24',
    autopay: 0,
    account_id: 1,
    status: 'due',
    min_payment: null,
  },
  {
    payee: 'Adatum Mobile',
    kind: 'phone',
    amount: 85.0,
    due_date: '2026-09-25',
    autopay: 1,
    account_id: 4,
    status: 'due',
    min_payment: null,
  },
  {
    payee: 'Tailspin Credit Union',
    kind: 'auto loan payment',
    amount: 412.6,
    due_date: '2026-09-27',
    autopay: 1,
    account_id: 1,
    status: 'due',
    min_payment: null,
  },
  {
    payee: 'Wingtip Bank',
    kind: 'credit card statement (Rewards Visa ••1094)',
    amount: 3150.4,
    due_date: '2026-09-30',
    autopay: 0,
    account_id: 1,
    status: 'due',
    min_payment: 35.0,
  },
  {
    payee: 'Woodgrove Bank',
    kind: 'mortgage payment',
    amount: 2184.0,
    due_date: '2026-10-01',
    autopay: 1,
    account_id: 1,
    status: 'due',
    min_payment: null,
  },
  {
    payee: 'Northside Fitness',
    kind: 'gym membership',
    amount: 54.0,
    due_date: '2026-10-01',
    autopay: 1,
    account_id: 3,
    status: 'due',
    min_payment: null,
  },
  {
    payee: 'Contoso Energy',
    kind: 'electricity',
    amount: 84.1,
    due_date: '2026-10-02',
    autopay: 1,
    account_id: 4,
    status: 'due',
    min_payment: null,
  },
  {
    payee: 'Contoso Card',
    kind: 'credit card statement (Cash Back Mastercard ••5517)',
    amount: 642.88,
    due_date: '2026-10-09',
    autopay: 0,
    account_id: 1,
    status: 'due',
    min_payment: 25.0,
  },
  {
    payee: 'Proseware Insurance',
    kind: 'home insurance (annual)',
    amount: 1236.0,
    due_date: '2026-10-15',
    autopay: 0,
    account_id: 1,
    status: 'due',
    min_payment: null,
  },
  {
    payee: 'City of Riverside',
    kind: 'property tax (2nd half)',
    amount: 3480.0,
    due_date: '2026-10-31',
    autopay: 0,
    account_id: 1,
    status: 'due',
    min_payment: null,
  },
  {
    payee: 'Wingtip Bank',
    kind: 'credit card statement (Rewards Visa ••1094)',
    amount: 2874.15,
    due_date: '2026-08-31',
    autopay: 0,
    account_id: 1,
    status: 'paid',
    min_payment: 35.0,
  },
  {
    payee: 'Riverside Water',
    kind: 'water',
    amount: 51.2,
    due_date: '2026-08-24',
    autopay: 0,
    account_id: 1,
    status: 'paid',
    min_payment: null,
  },
  {
    payee: 'Litware Internet',
    kind: 'internet',
    amount: 69.99,
    due_date: '2026-08-22',
    autopay: 1,
    account_id: 1,
    status: 'paid',
    min_payment: null,
  },
];

interface Tx {
  date: string;
  account_id: number;
  merchant: string;
  description: string;
  category: string;
  amount: number;
}

function transactions(): Tx[] {
  const rand = mulberry32(20260920);
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rand() * xs.length)];
  const between = (lo: number, hi: number) => cents(lo + rand() * (hi - lo));
  const out: Tx[] = [];
  const card = () => (rand() < 0.65 ? 3 : 4);
  for (let day = TX_FROM; day <= TODAY; day = addDays(day, 1)) {
    const d = new Date(`${day}T00:00:00Z`);
    const dom = d.getUTCDate();
    const wd = d.getUTCDay();
    if (dom === 1) {
      out.push({
        date: day,
        account_id: 1,
        merchant: 'Woodgrove Bank',
        description: 'Mortgage payment',
        category: 'housing',
        amount: -2184.0,
      });
      out.push({
        date: day,
        account_id: 1,
        merchant: 'Woodgrove Bank',
        description: 'Transfer to High-Yield Savings ••7730',
        category: 'transfer',
        amount: -1000,
      });
      out.push({
        date: day,
        account_id: 2,
        merchant: 'Woodgrove Bank',
        description: 'Transfer from Everyday Checking ••4821',
        category: 'transfer',
        amount: 1000,
      });
      out.push({
        date: day,
        account_id: 3,
        merchant: 'Northside Fitness',
        description: 'Monthly membership',
        category: 'health',
        amount: -54.0,
      });
    }
    if (dom === 2)
      out.push({
        date: day,
        account_id: 4,
        merchant: 'Contoso Energy',
        description: 'Electricity autopay',
        category: 'utilities',
        amount: -between(71, 118),
      });
    if (dom === 21)
      out.push({
        date: day,
        account_id: 3,
        merchant: 'Streamly',
        description: 'Streamly Premium',
        category: 'subscriptions',
        amount: -15.49,
      });
    if (dom === 22)
      out.push({
        date: day,
        account_id: 1,
        merchant: 'Litware Internet',
        description: 'Internet autopay',
        category: 'utilities',
        amount: -69.99,
      });
    if (dom === 24)
      out.push({
        date: day,
        account_id: 1,
        merchant: 'Riverside Water',
        description: 'Water bill',
        category: 'utilities',
        amount: -between(41, 58),
      });
    if (dom === 25)
      out.push({ date: day, account_id: 4, merchant: 'Adatum Mobile', description: 'Phone plan', category: 'utilities', amount: -85.0 });
    if (dom === 27)
      out.push({
        date: day,
        account_id: 1,
        merchant: 'Tailspin Credit Union',
        description: 'Auto loan payment',
        category: 'transport',
        amount: -412.6,
      });
    if (dom === 28)
      out.push({
        date: day,
        account_id: 2,
        merchant: 'Woodgrove Bank',
        description: 'Interest paid',
        category: 'income',
        amount: between(78, 86),
      });
    if (dom === 15)
      out.push({
        date: day,
        account_id: 3,
        merchant: 'Melodix',
        description: 'Melodix Family plan',
        category: 'subscriptions',
        amount: -16.99,
      });
    // Payroll every other Friday from 2026-06-05.
    if (wd === 5 && Math.round((Date.parse(`${day}T00:00:00Z`) - Date.parse('2026-06-05T00:00:00Z')) / 86_400_000) % 14 === 0) {
      out.push({
        date: day,
        account_id: 1,
        merchant: 'Northwind Labs',
        description: 'Payroll direct deposit',
        category: 'income',
        amount: 4215.38,
      });
    }
    if (wd === 6 || (wd === 3 && rand() < 0.5)) {
      out.push({
        date: day,
        account_id: card(),
        merchant: pick(['Fresh Basket Market', 'Harbor Co-op', 'Fresh Basket Market']),
        description: 'Groceries',
        category: 'groceries',
        amount: -between(38, 164),
      });
    }
    if (rand() < 0.38) {
      const m = pick(['Juniper Café', 'Noodle Bar', 'Taqueria Sol', 'Bean There Coffee', 'Bean There Coffee', 'Pho Saigon']);
      const hi = m === 'Bean There Coffee' ? 9 : 48;
      out.push({
        date: day,
        account_id: card(),
        merchant: m,
        description: m === 'Bean There Coffee' ? 'Coffee' : 'Restaurant',
        category: 'dining',
        amount: -between(hi / 4, hi),
      });
    }
    if (rand() < 0.12)
      out.push({
        date: day,
        account_id: card(),
        merchant: 'Northgate Fuel',
        description: 'Fuel',
        category: 'transport',
        amount: -between(34, 61),
      });
    if (rand() < 0.1)
      out.push({
        date: day,
        account_id: card(),
        merchant: 'Metro Transit',
        description: 'Transit pass reload',
        category: 'transport',
        amount: -20.0,
      });
    if (rand() < 0.14) {
      const m = pick(['Tailwind Goods', 'Tailwind Goods', 'Lamna Home', 'Riverside Books', 'Trey Outdoor']);
      out.push({
        date: day,
        account_id: card(),
        merchant: m,
        description: 'Online order',
        category: 'shopping',
        amount: -between(12, 140),
      });
    }
    if (rand() < 0.05)
      out.push({
        date: day,
        account_id: 3,
        merchant: 'Lakeside Pharmacy',
        description: 'Pharmacy',
        category: 'health',
        amount: -between(8, 42),
      });
    if (rand() < 0.06)
      out.push({
        date: day,
        account_id: card(),
        merchant: 'Cinema Royale',
        description: 'Movie tickets',
        category: 'entertainment',
        amount: -between(24, 38),
      });
  }
  // One-offs that other plugins' data refers to (the Lisbon trip, the card payments).
  out.push({
    date: '2026-08-14',
    account_id: 3,
    merchant: 'TAP Air Portugal',
    description: 'Flights to Lisbon, 2 passengers',
    category: 'travel',
    amount: -1284.0,
  });
  out.push({
    date: '2026-08-16',
    account_id: 3,
    merchant: 'Hotel Almada',
    description: 'Hotel deposit',
    category: 'travel',
    amount: -420.0,
  });
  out.push({
    date: '2026-08-31',
    account_id: 1,
    merchant: 'Wingtip Bank',
    description: 'Credit card payment ••1094',
    category: 'transfer',
    amount: -2874.15,
  });
  out.push({
    date: '2026-08-31',
    account_id: 3,
    merchant: 'Wingtip Bank',
    description: 'Payment received, thank you',
    category: 'transfer',
    amount: 2874.15,
  });
  out.push({
    date: '2026-09-09',
    account_id: 1,
    merchant: 'Contoso Card',
    description: 'Credit card payment ••5517',
    category: 'transfer',
    amount: -588.3,
  });
  out.push({
    date: '2026-09-09',
    account_id: 4,
    merchant: 'Contoso Card',
    description: 'Payment received',
    category: 'transfer',
    amount: 588.3,
  });
  out.push({
    date: '2026-09-12',
    account_id: 3,
    merchant: 'Tailwind Goods',
    description: 'Standing desk',
    category: 'shopping',
    amount: -489.0,
  });
  out.push({ date: '2026-07-11', account_id: 3, merchant: 'Osteria Lupa', description: 'Restaurant', category: 'dining', amount: -98.2 });
  out.push({
    date: '2026-09-18',
    account_id: 3,
    merchant: 'Osteria Lupa',
    description: 'Dinner with Sam and Jordan',
    category: 'dining',
    amount: -126.4,
  });
  return out.sort((a, b) => a.date.localeCompare(b.date) || a.account_id - b.account_id);
}

/** Current assets and liabilities, from the seeded accounts and holdings. */
export function currentPosition(db: Database.Database): { assets: number; liabilities: number } {
  const rows = db.prepare('SELECT type, balance FROM accounts').all() as { type: string; balance: number }[];
  const invested = (db.prepare('SELECT coalesce(sum(shares * price), 0) AS v FROM holdings').get() as { v: number }).v;
  let assets = invested;
  let liabilities = 0;
  for (const r of rows) {
    if (r.balance >= 0) assets += r.balance;
    else liabilities += -r.balance;
  }
  return { assets: cents(assets), liabilities: cents(liabilities) };
}

export function seed(db: Database.Database): void {
  db.exec(`
    CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT NOT NULL, institution TEXT NOT NULL, type TEXT NOT NULL,
      last4 TEXT NOT NULL, balance REAL NOT NULL, credit_limit REAL, rate REAL);
    CREATE TABLE holdings (id INTEGER PRIMARY KEY, account_id INTEGER NOT NULL REFERENCES accounts(id), symbol TEXT NOT NULL,
      name TEXT NOT NULL, asset_class TEXT NOT NULL, shares REAL NOT NULL, price REAL NOT NULL, cost_basis REAL NOT NULL);
    CREATE TABLE transactions (id INTEGER PRIMARY KEY, date TEXT NOT NULL, account_id INTEGER NOT NULL REFERENCES accounts(id),
      merchant TEXT NOT NULL, description TEXT NOT NULL, category TEXT NOT NULL, amount REAL NOT NULL);
    CREATE INDEX tx_by_date ON transactions (date);
    CREATE TABLE bills (id INTEGER PRIMARY KEY, payee TEXT NOT NULL, kind TEXT NOT NULL, amount REAL NOT NULL, due_date TEXT NOT NULL,
      autopay INTEGER NOT NULL, account_id INTEGER NOT NULL REFERENCES accounts(id), status TEXT NOT NULL, min_payment REAL);
    CREATE TABLE net_worth_history (month TEXT PRIMARY KEY, assets REAL NOT NULL, liabilities REAL NOT NULL);
  `);
  const meta = db.prepare('INSERT INTO meta (key, value) VALUES (?, ?)');
  meta.run('today', TODAY);
  meta.run('owner', 'Jamie Chen');
  meta.run('currency', 'USD');
  const acc = db.prepare(
    'INSERT INTO accounts (id, name, institution, type, last4, balance, credit_limit, rate) VALUES (@id, @name, @institution, @type, @last4, @balance, @credit_limit, @rate)',
  );
  for (const a of ACCOUNTS) acc.run(a);
  const hold = db.prepare(
    'INSERT INTO holdings (account_id, symbol, name, asset_class, shares, price, cost_basis) VALUES (@account_id, @symbol, @name, @asset_class, @shares, @price, @cost_basis)',
  );
  for (const h of HOLDINGS) hold.run(h);
  // Investment accounts carry their holdings' value as their balance.
  db.exec(
    "UPDATE accounts SET balance = (SELECT round(sum(shares * price), 2) FROM holdings WHERE holdings.account_id = accounts.id) WHERE type IN ('brokerage', 'retirement')",
  );
  const tx = db.prepare(
    'INSERT INTO transactions (date, account_id, merchant, description, category, amount) VALUES (@date, @account_id, @merchant, @description, @category, @amount)',
  );
  for (const t of transactions()) tx.run(t);
  const bill = db.prepare(
    'INSERT INTO bills (payee, kind, amount, due_date, autopay, account_id, status, min_payment) VALUES (@payee, @kind, @amount, @due_date, @autopay, @account_id, @status, @min_payment)',
  );
  for (const b of BILLS) bill.run(b);
  // Month-end history for the 23 months before this one: steady growth with a dip in spring 2025.
  const now = currentPosition(db);
  const hist = db.prepare('INSERT INTO net_worth_history (month, assets, liabilities) VALUES (?, ?, ?)');
  for (let back = 23; back >= 1; back--) {
    const d = new Date(Date.UTC(2026, 8 - back, 1));
    const month = d.toISOString().slice(0, 7);
    const dip = month >= '2025-03' && month <= '2025-05' ? 0.035 : 0;
    const assets = now.assets * (1 - 0.0078 * back - dip) + Math.sin(back * 1.7) * 2400;
    const liabilities = now.liabilities + 1420 * back + Math.cos(back * 1.3) * 900;
    hist.run(month, cents(assets), cents(liabilities));
  }
}
